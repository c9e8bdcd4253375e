import { BubbleError, isValidId } from '@bubble/protocol';
import { mintToken, type AuthOptions } from '../auth.js';
import { readJson } from '../http/body.js';
import { sendJson } from '../http/respond.js';
import type { RequestContext, Router } from '../http/router.js';
import { DEMO_CSP, demoPage } from './page.js';
import { SdkFiles } from './sdk-files.js';

export interface DemoOptions {
  /**
   * Serve POST /demo/token, which mints a 1 h token for any user id it is given. Only for a
   * gateway running on generated development secrets: it hands out tokens to anyone who asks.
   */
  devTokens: boolean;
}

export interface DemoDeps extends DemoOptions {
  auth: AuthOptions;
  /** Where the SDK's built files are read from; defaults to @bubble/client's dist/. */
  sdk?: SdkFiles;
}

const TOKEN_TTL_S = 3600;
const TOKEN_BODY_LIMIT = 1024;

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': DEMO_CSP,
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/**
 * GET /demo: a page that signs in and shows the live badge through the SDK, which it loads from
 * GET /demo/sdk/<name>.js. With `devTokens`, POST /demo/token `{"user"}` → `{"token"}`.
 */
export function addDemoRoutes(router: Router, deps: DemoDeps): void {
  const page = Buffer.from(demoPage(deps.devTokens));
  const sdk = deps.sdk ?? new SdkFiles();
  const servePage = async ({ res }: RequestContext) => {
    res.writeHead(200, { ...PAGE_HEADERS, 'content-length': page.length });
    res.end(page);
  };
  router
    .add('GET', '/demo', servePage)
    .add('GET', '/demo/', servePage)
    .add('GET', '/demo/sdk/:file', async ({ res, params }) => {
      let text: string | undefined;
      try {
        text = await sdk.read(params.file!);
      } catch (err) {
        throw new BubbleError('UB_ERR_NOT_FOUND', 'the SDK is not built (run npx tsc -b)', {
          cause: err,
        });
      }
      if (text === undefined) throw new BubbleError('UB_ERR_NOT_FOUND', 'no such SDK file');
      res.writeHead(200, {
        'content-type': 'text/javascript; charset=utf-8',
        'content-length': Buffer.byteLength(text),
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
      });
      res.end(text);
    });
  if (!deps.devTokens) return;
  router.add('POST', '/demo/token', async ({ req, res }) => {
    // A JSON content type keeps other sites' plain form posts out (theirs need a CORS preflight).
    if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
      throw new BubbleError('UB_ERR_BAD_REQUEST', 'the body must be application/json');
    }
    const body = await readJson(req, TOKEN_BODY_LIMIT);
    if (
      typeof body !== 'object' ||
      body === null ||
      Array.isArray(body) ||
      Object.keys(body).join() !== 'user'
    ) {
      throw new BubbleError('UB_ERR_BAD_REQUEST', 'the body must be {"user":"<id>"}');
    }
    const { user } = body as { user: unknown };
    if (!isValidId(user)) {
      throw new BubbleError('UB_ERR_BAD_ID', 'user must be 1 to 64 characters of [A-Za-z0-9_.:@-]');
    }
    const secret = deps.auth.jwtSecret;
    if (!secret)
      throw new BubbleError('UB_ERR_NOT_FOUND', 'no JWT secret to mint demo tokens with');
    const token = await mintToken({
      secret,
      audience: deps.auth.jwtAudience,
      issuer: deps.auth.jwtIssuer,
      user,
      ttlSeconds: TOKEN_TTL_S,
    });
    sendJson(res, 200, { token });
  });
}
