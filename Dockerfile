# Rota: one image for executors (`rota worker`), scheduler replicas (`rota scheduler`) and the
# dashboard (`rota dashboard`).
# Your tasks file: mount it at /app/tasks/tasks.js, or build it in (see README, "Docker").

# Build stage: compile the TypeScript sources.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Runtime stage: production dependencies and what package.json's `files` lists (the compiled
# sources, the CommonJS entry, the Lua scripts, the dashboard's assets); no tests, no benchmarks,
# no compiler. test/packaging/runtime-image.test.ts builds this layout from these COPY lines.
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY lua ./lua
COPY cjs ./cjs
COPY src/dashboard/assets ./src/dashboard/assets
COPY --from=build /app/dist/src ./dist/src
RUN chmod +x dist/src/cli/main.js && ln -s /app/dist/src/cli/main.js /usr/local/bin/rota
# The default tasks file (the examples); replace it by mounting a folder at /app/tasks.
COPY --chown=node:node examples/tasks.js ./tasks/tasks.js
RUN chown node:node /app/tasks
USER node
ENTRYPOINT ["rota"]
# Healthy while the process is ready (/readyz on --health-port 8081: Redis answers, registered,
# not shutting down; docs/operations.md, Health). Every command run from this image passes
# --health-port 8081 for it (see docker-compose.yml).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8081/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["worker", "--tasks", "/app/tasks/tasks.js", "--health-port", "8081"]
