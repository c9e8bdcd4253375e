# syntax=docker/dockerfile:1
# One image for every role; the command picks it: server, core, gateway or all.
#   docker build -t bubble .
#   docker run --rm -e REDIS_URL=redis://redis:6379 -e BUBBLE_API_KEY=... -e BUBBLE_JWT_SECRET=... bubble gateway
# docs/deployment.md says what each role needs. test/deploy/image.test.ts rebuilds the runtime
# stage below from its COPY lines and starts every role from it.

# ---- build: every dependency, the TypeScript build --------------------------------------------
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/protocol/package.json packages/protocol/
COPY packages/store/package.json packages/store/
COPY packages/badges/package.json packages/badges/
COPY packages/core/package.json packages/core/
COPY packages/server/package.json packages/server/
COPY packages/events/package.json packages/events/
COPY packages/gateway/package.json packages/gateway/
COPY packages/cli/package.json packages/cli/
COPY packages/bench/package.json packages/bench/
COPY packages/test-utils/package.json packages/test-utils/
COPY packages/client/package.json packages/client/
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY packages/ packages/
RUN npm run build

# ---- runtime: production dependencies and the built packages the roles load -------------------
FROM node:20-slim AS runtime
# tini as PID 1 forwards SIGTERM to node (which drains) and reaps zombies.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
WORKDIR /app
# Every workspace manifest, so `npm ci` finds the lock file in step; bench and test-utils are
# development tools whose built code stays out (`bubble bench` says it is not installed).
COPY package.json package-lock.json ./
COPY packages/protocol/package.json packages/protocol/
COPY packages/store/package.json packages/store/
COPY packages/badges/package.json packages/badges/
COPY packages/core/package.json packages/core/
COPY packages/server/package.json packages/server/
COPY packages/events/package.json packages/events/
COPY packages/gateway/package.json packages/gateway/
COPY packages/cli/package.json packages/cli/
COPY packages/bench/package.json packages/bench/
COPY packages/test-utils/package.json packages/test-utils/
COPY packages/client/package.json packages/client/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/packages/protocol/dist packages/protocol/dist/
COPY --from=build /app/packages/store/dist packages/store/dist/
COPY --from=build /app/packages/store/lua packages/store/lua/
COPY --from=build /app/packages/badges/dist packages/badges/dist/
COPY --from=build /app/packages/core/dist packages/core/dist/
COPY --from=build /app/packages/server/dist packages/server/dist/
COPY --from=build /app/packages/events/dist packages/events/dist/
COPY --from=build /app/packages/gateway/dist packages/gateway/dist/
COPY --from=build /app/packages/client/dist packages/client/dist/
COPY --from=build /app/packages/cli/dist packages/cli/dist/
COPY --from=build /app/packages/cli/bin packages/cli/bin/
# The files stay root's and read-only to the process; bubble writes nothing to disk.
USER node
# 8080: the public API and WebSocket (gateway, all). 9090: /healthz, /readyz, /metrics (and the
# gateway's dashboard) when BUBBLE_INTERNAL_PORT=9090, as the compose files set it.
EXPOSE 8080 9090
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "packages/cli/bin/healthcheck.js", "/healthz"]
ENTRYPOINT ["tini", "--", "node", "packages/cli/bin/bubble.js"]
CMD ["all"]
