import { createHash, createPublicKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BubbleError, isValidId } from '@bubble/protocol';
import {
  errors as joseErrors,
  jwtVerify,
  SignJWT,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
} from 'jose';

export interface AuthOptions {
  /** HS256 secret; optional when `jwtPublicKey` is set (the platform signs its own tokens). */
  jwtSecret?: string | undefined;
  /** An SPKI PEM public key: RSA (RS256, at least 2048 bits) or EC P-256 (ES256). */
  jwtPublicKey?: string | undefined;
  jwtAudience?: string | undefined;
  /** The required `iss`, when set. */
  jwtIssuer?: string | undefined;
  /** When set, `iat` is required and a token older than this is refused, whatever its `exp`. */
  maxTokenAgeSeconds?: number | undefined;
  apiKey: string;
  /** How many verified tokens are remembered (default 50,000). */
  verifiedCacheEntries?: number | undefined;
}

const CLOCK_TOLERANCE_S = 5;
const MAX_TOKEN_LENGTH = 4096;

/** The longest lifetime `mintToken` signs (and so `bubble token --ttl`): 30 days. */
export const MAX_MINTED_TTL_SECONDS = 30 * 86_400;

/** Verified tokens remembered, so a poller's every request is not a signature check again. */
const VERIFIED_CACHE_SIZE = 50_000;

export type TokenAlgorithm = 'HS256' | 'RS256' | 'ES256';

/**
 * The algorithm a public key verifies, refusing keys too weak to trust. The key decides the
 * algorithm, never the token's header: that is what keeps an HS256 token "signed" with the public
 * key's PEM text (algorithm confusion) from verifying.
 */
export function publicKeyAlgorithm(pem: string): { key: KeyObject; algorithm: TokenAlgorithm } {
  let key: KeyObject;
  try {
    key = createPublicKey(pem.replace(/\\n/g, '\n'));
  } catch (err) {
    throw new Error('not a PEM public key (-----BEGIN PUBLIC KEY-----)', { cause: err });
  }
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    if ((details.modulusLength ?? 0) < 2048) throw new Error('an RSA key needs at least 2048 bits');
    return { key, algorithm: 'RS256' };
  }
  if (key.asymmetricKeyType === 'ec' && details.namedCurve === 'prime256v1') {
    return { key, algorithm: 'ES256' };
  }
  throw new Error('the key must be RSA (RS256) or EC P-256 (ES256)');
}

/**
 * Platform calls carry X-Api-Key; end users carry a JWT whose `sub` is their id: HS256 with the
 * shared secret, and/or RS256/ES256 with the platform's public key. The user id is only ever
 * taken from a verified token.
 */
export class Authenticator {
  private readonly keys = new Map<TokenAlgorithm, Uint8Array | KeyObject>();
  private readonly getKey: JWTVerifyGetKey;
  private readonly verifyOptions: JWTVerifyOptions;
  private readonly apiKeyDigest: Buffer;
  /**
   * token → its subject and the last moment (ms) it may be accepted, for tokens this process
   * verified; least recently used first, so the bound evicts a token nobody presents any more.
   */
  private readonly verified = new Map<string, { sub: string; untilMs: number }>();

  constructor(private readonly options: AuthOptions) {
    if (options.jwtSecret) this.keys.set('HS256', new TextEncoder().encode(options.jwtSecret));
    if (options.jwtPublicKey) {
      const { key, algorithm } = publicKeyAlgorithm(options.jwtPublicKey);
      this.keys.set(algorithm, key);
    }
    this.getKey = (header) => {
      const key = this.keys.get(header.alg as TokenAlgorithm);
      if (!key) throw unauthorized('the token is not valid');
      return key;
    };
    const maxAge = options.maxTokenAgeSeconds;
    this.verifyOptions = {
      algorithms: [...this.keys.keys()],
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: maxAge === undefined ? ['exp', 'sub'] : ['exp', 'sub', 'iat'],
      ...(options.jwtAudience ? { audience: options.jwtAudience } : {}),
      ...(options.jwtIssuer ? { issuer: options.jwtIssuer } : {}),
      ...(maxAge === undefined ? {} : { maxTokenAge: maxAge }),
    };
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
    // The exact string was verified before: only the passing of time can have changed.
    const known = this.verified.get(token);
    if (known) {
      this.verified.delete(token);
      if (Date.now() <= known.untilMs) {
        this.verified.set(token, known);
        return known.sub;
      }
    }
    try {
      const { payload } = await jwtVerify(token, this.getKey, this.verifyOptions);
      if (!isValidId(payload.sub)) throw unauthorized('the token subject is not a valid user id');
      if (this.verified.size >= (this.options.verifiedCacheEntries ?? VERIFIED_CACHE_SIZE)) {
        this.verified.delete(this.verified.keys().next().value!);
      }
      this.verified.set(token, { sub: payload.sub, untilMs: this.acceptedUntilMs(payload) });
      return payload.sub;
    } catch (err) {
      if (err instanceof BubbleError) throw err;
      const expired = err instanceof joseErrors.JWTExpired;
      throw new BubbleError(
        'UB_ERR_UNAUTHORIZED',
        expired ? 'the token has expired' : 'the token is not valid',
        { cause: err },
      );
    }
  }

  /** Whether `token` is remembered as verified (so a request presenting it skips the check). */
  remembers(token: string): boolean {
    return this.verified.has(token);
  }

  /** The last moment jwtVerify would still accept the token: `exp`, and `iat` + max age. */
  private acceptedUntilMs(payload: { exp?: number; iat?: number }): number {
    const toleranceMs = CLOCK_TOLERANCE_S * 1000;
    const expMs = payload.exp! * 1000 + toleranceMs;
    const maxAge = this.options.maxTokenAgeSeconds;
    if (maxAge === undefined) return expMs;
    return Math.min(expMs, (payload.iat! + maxAge) * 1000 + toleranceMs);
  }
}

export interface MintOptions {
  secret: string;
  user: string;
  ttlSeconds: number;
  audience?: string | undefined;
  issuer?: string | undefined;
}

export async function mintToken({
  secret,
  user,
  ttlSeconds,
  audience,
  issuer,
}: MintOptions): Promise<string> {
  if (!isValidId(user)) throw new BubbleError('UB_ERR_BAD_ID', 'the user id is not valid');
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_MINTED_TTL_SECONDS) {
    throw new BubbleError(
      'UB_ERR_BAD_REQUEST',
      `a token lives 1 s to ${MAX_MINTED_TTL_SECONDS / 86_400} days`,
    );
  }
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds);
  if (audience) jwt.setAudience(audience);
  if (issuer) jwt.setIssuer(issuer);
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
