import type { TopicPost } from './post-index.js';

/**
 * A topic's window holds one member per post carrying the topic, "<author> <id> <t1> <t2> …"
 * (ids never contain a space), scored by the post's ts: the post's author and every topic it
 * carries, so that each window can be counted on its own and no post is counted twice. In the
 * window of topic t a post counts for user u only when u does not follow its author (its
 * author's window counts it) and t is the first of the post's topics that u follows.
 */
export function topicMember(author: string, id: string, topics: readonly string[]): string {
  return `${author} ${id} ${topics.join(' ')}`;
}

export function parseTopicMember(member: string, ts: number): TopicPost {
  const parts = member.split(' ');
  return { author: parts[0]!, id: parts[1]!, ts, topics: parts.slice(2) };
}

/** The stored form of a post's topics in its author's keys: space-separated, "" for none. */
export function joinTopics(topics: readonly string[] | undefined): string {
  return topics && topics.length > 0 ? topics.join(' ') : '';
}

export function splitTopics(joined: string | null | undefined): string[] {
  return joined ? joined.split(' ') : [];
}

/** Whether window `topic` is the one route that counts the post (members of topicMember). */
export function countsInTopicWindow(
  member: string,
  topic: string,
  follows: ReadonlySet<string>,
  topics: ReadonlySet<string>,
): boolean {
  const first = member.indexOf(' ');
  if (follows.has(member.slice(0, first))) return false;
  const parts = member.slice(member.indexOf(' ', first + 1) + 1).split(' ');
  for (const t of parts) if (topics.has(t)) return t === topic;
  return false;
}
