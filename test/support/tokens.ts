import { mintToken } from '@bubble/gateway';

/** Users' JWTs under one secret, each minted on first use and kept (valid 30 minutes). */
export class TokenCache {
  private readonly tokens = new Map<string, Promise<string>>();

  constructor(private readonly secret: string) {}

  of(user: string): Promise<string> {
    let token = this.tokens.get(user);
    if (!token) {
      token = mintToken({ secret: this.secret, user, ttlSeconds: 30 * 60 });
      this.tokens.set(user, token);
    }
    return token;
  }
}
