import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BubbleError, isValidId } from '@bubble/protocol';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';

export interface AuthOptions {
  jwtSecret: string;
  jwtAudience?: string | undefined;
  apiKey: string;
}

const CLOCK_TOLERANCE_S = 5;
const MAX_TOKEN_LENGTH = 4096;

/**
 * Platform calls carry X-Api-Key; end users carry an HS256 JWT whose `sub` is their id.
 * The user id is only ever taken from a verified token.
 */
/** Verified tokens remembered, so a poller's every request is not a signature check again. */
const VERIFIED_CACHE_SIZE = 50_000;

export class Authenticator {
  private readonly secret: Uint8Array;
  private readonly apiKeyDigest: Buffer;
  /** token → its subject and expiry (ms), for tokens this process verified; oldest first. */
  private readonly verified = new Map<string, { sub: string; expMs: number }>();

  constructor(private readonly options: AuthOptions) {
    this.secret = new TextEncoder().encode(options.jwtSecret);
    this.apiKeyDigest = digest(options.apiKey);
  }

  /** Compares digests so the comparison takes the same time whatever the key's length. */
  requirePlatform(req: IncomingMessage): void {
    const given = req.headers['x-api-key'];
    if (typeof given !== 'string' || given === '') {
      throw unauthorized('an X-Api-Key header is required');
    }
    if (!timingSafeEqual(digest(given), this.apiKeyDigest)) {
      throw unauthorized('the API key is not valid');
    }
  }

  async requireUser(req: IncomingMessage): Promise<string> {
    const header = req.headers.authorization;
    if (typeof header !== 'string' || !/^Bearer /i.test(header)) {
      throw unauthorized('an Authorization: Bearer <token> header is required');
    }
    return this.verifyToken(header.slice(7).trim());
  }

  async verifyToken(token: string): Promise<string> {
    if (token === '' || token.length > MAX_TOKEN_LENGTH)
      throw unauthorized('the token is not valid');
    // The exact string was verified with this secret before: only its expiry can have changed.
    const known = this.verified.get(token);
    if (known) {
      if (Date.now() <= known.expMs + CLOCK_TOLERANCE_S * 1000) return known.sub;
      this.verified.delete(token);
    }
    try {
      const { payload } = await jwtVerify(token, this.secret, {
        algorithms: ['HS256'],
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['exp', 'sub'],
        ...(this.options.jwtAudience ? { audience: this.options.jwtAudience } : {}),
      });
      if (!isValidId(payload.sub)) throw unauthorized('the token subject is not a valid user id');
      if (this.verified.size >= VERIFIED_CACHE_SIZE) {
        this.verified.delete(this.verified.keys().next().value!);
      }
      this.verified.set(token, { sub: payload.sub, expMs: payload.exp! * 1000 });
      return payload.sub;
    } catch (err) {
      if (err instanceof BubbleError) throw err;
      const expired = err instanceof joseErrors.JWTExpired;
      throw new BubbleError(
        'UB_ERR_UNAUTHORIZED',
        expired ? 'the token has expired' : 'the token is not valid',
        {
          cause: err,
        },
      );
    }
  }
}

export interface MintOptions {
  secret: string;
  user: string;
  ttlSeconds: number;
  audience?: string | undefined;
}

export async function mintToken({
  secret,
  user,
  ttlSeconds,
  audience,
}: MintOptions): Promise<string> {
  if (!isValidId(user)) throw new BubbleError('UB_ERR_BAD_ID', 'the user id is not valid');
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds);
  if (audience) jwt.setAudience(audience);
  return jwt.sign(new TextEncoder().encode(secret));
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

function unauthorized(message: string): BubbleError {
  return new BubbleError('UB_ERR_UNAUTHORIZED', message);
}

/** Query parameters that carry credentials: never accepted, so none end up in access logs. */
const CREDENTIAL_PARAMS = ['token', 'access_token', 'jwt', 'api_key', 'apikey', 'key'];

export function hasCredentialInQuery(query: URLSearchParams): boolean {
  for (const name of query.keys()) {
    if (CREDENTIAL_PARAMS.includes(name.toLowerCase())) return true;
  }
  return false;
}

/**
 * A request with credentials in its query string is not authenticated by them, whatever else it
 * carries: refused as a request without valid credentials.
 */
export function credentialInQueryError(): BubbleError {
  return new BubbleError(
    'UB_ERR_UNAUTHORIZED',
    'credentials are never accepted in a query string: send Authorization or X-Api-Key',
  );
}
