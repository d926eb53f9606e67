# The service's image: one image, four roles chosen by the command.
#   docker run IMAGE migrate               the release step: apply migrations, exit
#   docker run IMAGE serve --no-workers    an API process
#   docker run IMAGE worker                a worker process (/metrics, /healthz on METRICS_PORT)
#   docker run IMAGE serve                 API and workers in one process (the default)
# The admin commands (`org create`, `key issue`, ...) run the same way. See "The container image"
# in the README.
#
# NODE_IMAGE: the base of every stage. By default the official image of the current Node.js LTS
# line (the dependencies need 22 or newer); a registry-less machine passes a local stand-in
# (.ci/container does).
ARG NODE_IMAGE=node:26-bookworm-slim

# Production dependencies only (no pino-pretty, an optional dependency: JSON logs in the image).
# --ignore-scripts: the package's own `prepare` compiles src/, which needs the dev dependencies; no
# dependency needs an install script, and our `postinstall` (patch-package, which patches
# libphonenumber-js) is run by name.
FROM ${NODE_IMAGE} AS dependencies
# npm's registry, proxy and certificate authorities (PEM text: a proxy that inspects TLS), when the
# build machine needs others than npm's own defaults. Declared in the build stages only: the final
# stage has none of them, nor does its history.
ARG npm_config_registry
ARG npm_config_proxy
ARG npm_config_https_proxy
ARG npm_config_noproxy
ARG npm_config_ca
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches/ patches/
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
 && npm run postinstall

# src/ compiled into dist/ with the dev dependencies (TypeScript), which stay in this stage.
FROM ${NODE_IMAGE} AS build
ARG npm_config_registry
ARG npm_config_proxy
ARG npm_config_https_proxy
ARG npm_config_noproxy
ARG npm_config_ca
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.js scripts/
COPY src/ src/
RUN node scripts/build.js

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    DATA_DIR=/data
WORKDIR /app
# The code belongs to root and is read-only to the service's user (`node`, uid 1000, as in the
# official images). /data is the embedded database's directory, for a trial without DATABASE_URL:
# mount a volume there to keep it.
RUN mkdir /data && chown node:node /data
# package.json: "type": "module" makes dist/*.js ES modules.
COPY package.json ./
COPY --from=dependencies /app/node_modules/ node_modules/
COPY --from=build /app/dist/ dist/
COPY scripts/healthcheck.js scripts/
USER node
EXPOSE 8080 9464
# /healthz of `serve` (on PORT) or `worker` (on METRICS_PORT); see scripts/healthcheck.js.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "scripts/healthcheck.js"]
# --max-semi-space-size=32: as `npm start` runs it (see "Running it" in the README).
ENTRYPOINT ["node", "--max-semi-space-size=32", "dist/cli.js"]
CMD ["serve"]
