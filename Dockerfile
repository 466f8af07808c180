# The production image (docs/production.md): built on the Node the project pins (package.json's
# devDependencies `node`, docs/decisions/0001), run as a non-root user from a read-only filesystem.
# Build: docker build -t webhook-inbox .   Run: docs/production.md#the-container-image.
ARG NODE_VERSION=26.10.0

# Build stage: the whole development install, only to bundle dist/ (npm run build, decision 0002).
# --ignore-scripts: the build needs esbuild alone, not the pinned Node's own download, workerd or
# the patch of postgres.js (the runtime stage installs and patches its own node_modules).
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY bin ./bin
COPY drizzle ./drizzle
COPY src ./src
RUN node bin/build.js

# Runtime stage: production dependencies only (no esbuild, tsx or pinned Node: `prepare` keeps the
# dist/ copied in), the built entries, the migrations and nothing else. Everything is root's and
# read-only to the service's user.
FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production PORT=3000
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
COPY bin ./bin
COPY drizzle ./drizzle
COPY --from=build /app/dist ./dist
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
# The official image's `node` user, by number, so that runAsNonRoot-style checks can verify it.
USER 1000:1000
EXPOSE 3000
# The service drains on SIGTERM (HTTP, then the background jobs, then the pools): give it the time
# docs/production.md states (`docker run --stop-timeout`, compose's stop_grace_period).
STOPSIGNAL SIGTERM
# Liveness only: /healthz answers while the process serves. The image has no curl; Node's fetch is there.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# What `npm start` runs, without npm in between (npm writes its logs under $HOME and relays signals).
CMD ["node", "bin/start.js"]
