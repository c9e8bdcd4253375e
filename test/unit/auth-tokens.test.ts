/**
 * End-user tokens beyond the shared secret: `iss` and the oldest `iat` where configured, the
 * platform's own RS256/ES256 key, algorithm confusion refused, and the verified-token cache
 * bounded and honouring every limit a fresh verification would apply.
 */
import { generateKeyPairSync } from 'node:crypto';
import { Authenticator, mintToken, type AuthOptions } from '@bubble/gateway';
import { SignJWT, importPKCS8 } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../../packages/cli/src/config.js';
import { resolveStartSecrets } from '../../packages/cli/src/secrets.js';

const SECRET = 'unit-test-secret-0123456789abcdef0123';
const API_KEY = 'unit-test-api-key-0123456789abcdef012';

function pemPair(kind: 'rsa' | 'ec' | 'rsa-weak') {
  const { publicKey, privateKey } =
    kind === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      : generateKeyPairSync('rsa', { modulusLength: kind === 'rsa' ? 2048 : 1024 });
  return {
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

const rsa = pemPair('rsa');
const ec = pemPair('ec');

async function signed(
  alg: 'RS256' | 'ES256' | 'HS256',
  key: string | Uint8Array,
  claims: { sub?: string; iss?: string; iat?: number; expInS?: number } = {},
): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg, typ: 'JWT' })
    .setSubject(claims.sub ?? 'alice')
    .setExpirationTime(nowS + (claims.expInS ?? 600));
  if (claims.iat !== undefined) jwt.setIssuedAt(claims.iat);
  if (claims.iss) jwt.setIssuer(claims.iss);
  const signingKey = typeof key === 'string' && alg !== 'HS256' ? await importPKCS8(key, alg) : key;
  return jwt.sign(
    typeof signingKey === 'string' ? new TextEncoder().encode(signingKey) : signingKey,
  );
}

function auth(options: Partial<AuthOptions>): Authenticator {
  return new Authenticator({ apiKey: API_KEY, ...options });
}

const refused = { code: 'UB_ERR_UNAUTHORIZED' };

describe('Authenticator: issuer and token age', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('with BUBBLE_JWT_ISSUER a token without it, or with another, is refused', async () => {
    const a = auth({ jwtSecret: SECRET, jwtIssuer: 'https://platform.example' });
    const right = await mintToken({
      secret: SECRET,
      user: 'alice',
      ttlSeconds: 60,
      issuer: 'https://platform.example',
    });
    expect(await a.verifyToken(right)).toBe('alice');
    const none = await mintToken({ secret: SECRET, user: 'alice', ttlSeconds: 60 });
    await expect(a.verifyToken(none)).rejects.toMatchObject(refused);
    const other = await mintToken({ secret: SECRET, user: 'alice', ttlSeconds: 60, issuer: 'x' });
    await expect(a.verifyToken(other)).rejects.toMatchObject(refused);
  });

  it('with a max age, iat is required and an old token is refused before its exp, also once remembered', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const a = auth({ jwtSecret: SECRET, maxTokenAgeSeconds: 60 });
    const withoutIat = await signed('HS256', SECRET, { expInS: 600 });
    await expect(a.verifyToken(withoutIat)).rejects.toMatchObject(refused);

    const fresh = await mintToken({ secret: SECRET, user: 'alice', ttlSeconds: 600 });
    expect(await a.verifyToken(fresh)).toBe('alice');
    expect(a.remembers(fresh)).toBe(true);
    vi.setSystemTime(Date.now() + 64_000); // within max age + 5 s of tolerance
    expect(await a.verifyToken(fresh)).toBe('alice');
    vi.setSystemTime(Date.now() + 2_000);
    await expect(a.verifyToken(fresh)).rejects.toMatchObject(refused);
    // A fresh verification of the same string agrees with the cache.
    await expect(
      auth({ jwtSecret: SECRET, maxTokenAgeSeconds: 60 }).verifyToken(fresh),
    ).rejects.toMatchObject(refused);
  });
});

describe('Authenticator: the platform signs with its own key', () => {
  it('RS256 by an RSA public key and ES256 by a P-256 key verify; the other algorithm does not', async () => {
    const byRsa = auth({ jwtPublicKey: rsa.publicPem });
    const byEc = auth({ jwtPublicKey: ec.publicPem });
    const rsToken = await signed('RS256', rsa.privatePem, { sub: 'bob' });
    const esToken = await signed('ES256', ec.privatePem, { sub: 'carol' });
    expect(await byRsa.verifyToken(rsToken)).toBe('bob');
    expect(await byEc.verifyToken(esToken)).toBe('carol');
    await expect(byRsa.verifyToken(esToken)).rejects.toMatchObject(refused);
    await expect(byEc.verifyToken(rsToken)).rejects.toMatchObject(refused);
  });

  it('a token signed by another private key is refused', async () => {
    const other = pemPair('rsa');
    const a = auth({ jwtPublicKey: rsa.publicPem });
    await expect(a.verifyToken(await signed('RS256', other.privatePem))).rejects.toMatchObject(
      refused,
    );
  });

  it('algorithm confusion: HS256 "signed" with the public key text is refused, with or without a secret', async () => {
    const forged = await signed('HS256', rsa.publicPem);
    await expect(auth({ jwtPublicKey: rsa.publicPem }).verifyToken(forged)).rejects.toMatchObject(
      refused,
    );
    const both = auth({ jwtPublicKey: rsa.publicPem, jwtSecret: SECRET });
    await expect(both.verifyToken(forged)).rejects.toMatchObject(refused);
    // Both kinds of configured token still verify side by side.
    expect(await both.verifyToken(await signed('HS256', SECRET))).toBe('alice');
    expect(await both.verifyToken(await signed('RS256', rsa.privatePem))).toBe('alice');
  });

  it('alg none and an HS256 token without any secret configured are refused', async () => {
    const a = auth({ jwtPublicKey: ec.publicPem });
    const header = Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url');
    const body = Buffer.from(
      JSON.stringify({ sub: 'alice', exp: Math.floor(Date.now() / 1000) + 60 }),
    ).toString('base64url');
    await expect(a.verifyToken(`${header}.${body}.`)).rejects.toMatchObject(refused);
    await expect(a.verifyToken(await signed('HS256', SECRET))).rejects.toMatchObject(refused);
  });
});

describe('Authenticator: the verified-token cache', () => {
  it('is bounded in entries and evicts the token least recently presented', async () => {
    const a = auth({ jwtSecret: SECRET, verifiedCacheEntries: 2 });
    const [t1, t2, t3] = await Promise.all(
      ['u1', 'u2', 'u3'].map((user) => mintToken({ secret: SECRET, user, ttlSeconds: 60 })),
    );
    await a.verifyToken(t1!);
    await a.verifyToken(t2!);
    await a.verifyToken(t1!); // t1 is now the most recent
    await a.verifyToken(t3!);
    expect([a.remembers(t1!), a.remembers(t2!), a.remembers(t3!)]).toEqual([true, false, true]);
    expect(await a.verifyToken(t2!)).toBe('u2'); // verified again, not refused
  });
});

describe('configuration of tokens', () => {
  it('a bad or weak BUBBLE_JWT_PUBLIC_KEY stops the process naming the variable', () => {
    for (const value of ['not a key', pemPair('rsa-weak').publicPem]) {
      expect(() => loadConfig({ BUBBLE_JWT_PUBLIC_KEY: value })).toThrow(ConfigError);
      expect(() => loadConfig({ BUBBLE_JWT_PUBLIC_KEY: value })).toThrow(/BUBBLE_JWT_PUBLIC_KEY/);
    }
  });

  it('a PEM with escaped newlines (one line of an env file) is accepted', () => {
    const oneLine = ec.publicPem.trim().replace(/\n/g, '\\n');
    expect(loadConfig({ BUBBLE_JWT_PUBLIC_KEY: oneLine }).BUBBLE_JWT_PUBLIC_KEY).toBe(oneLine);
  });

  it('BUBBLE_JWT_MAX_TOKEN_AGE takes seconds or a unit; anything else stops the process', () => {
    expect(loadConfig({ BUBBLE_JWT_MAX_TOKEN_AGE: '12h' }).BUBBLE_JWT_MAX_TOKEN_AGE).toBe(43_200);
    expect(loadConfig({ BUBBLE_JWT_MAX_TOKEN_AGE: '90' }).BUBBLE_JWT_MAX_TOKEN_AGE).toBe(90);
    for (const bad of ['0', '1y', '-5m', '400d']) {
      expect(() => loadConfig({ BUBBLE_JWT_MAX_TOKEN_AGE: bad })).toThrow(
        /BUBBLE_JWT_MAX_TOKEN_AGE/,
      );
    }
  });

  it('a gateway with the public key needs no JWT secret, and its Authenticator gets every check', async () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      BUBBLE_API_KEY: API_KEY,
      BUBBLE_JWT_PUBLIC_KEY: rsa.publicPem,
      BUBBLE_JWT_ISSUER: 'platform',
      BUBBLE_JWT_MAX_TOKEN_AGE: '1h',
    });
    const { secrets } = resolveStartSecrets('gateway', config);
    const a = new Authenticator(secrets!.auth);
    const nowS = Math.floor(Date.now() / 1000);
    expect(
      await a.verifyToken(await signed('RS256', rsa.privatePem, { iss: 'platform', iat: nowS })),
    ).toBe('alice');
    await expect(
      a.verifyToken(await signed('RS256', rsa.privatePem, { iat: nowS })),
    ).rejects.toMatchObject(refused);
    await expect(
      a.verifyToken(await signed('RS256', rsa.privatePem, { iss: 'platform', iat: nowS - 7200 })),
    ).rejects.toMatchObject(refused);
    expect(() =>
      resolveStartSecrets(
        'gateway',
        loadConfig({ NODE_ENV: 'production', BUBBLE_API_KEY: API_KEY }),
      ),
    ).toThrow(/BUBBLE_JWT_SECRET/);
  });
});

describe('mintToken', () => {
  it('refuses a lifetime beyond 30 days', async () => {
    await expect(
      mintToken({ secret: SECRET, user: 'alice', ttlSeconds: 31 * 86_400 }),
    ).rejects.toMatchObject({ code: 'UB_ERR_BAD_REQUEST' });
    await expect(
      mintToken({ secret: SECRET, user: 'alice', ttlSeconds: 30 * 86_400 }),
    ).resolves.toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  });
});
