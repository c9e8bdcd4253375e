/** What every scenario's options hold besides its own sizes. */
export interface BenchOptions {
  /** Progress lines (`bubble bench` writes them to stderr); none by default. */
  log: (line: string) => void;
}

/** Who posts: the authors, the posts their windows hold already, and the seed of the draws. */
export interface AuthorSizes {
  authors: number;
  /** Posts already in the authors' windows before the run (spread over the lookback). */
  windowPosts: number;
  seed: number;
}
