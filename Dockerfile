# Rota: one image for executors and scheduler replicas.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev
ENTRYPOINT ["node", "dist/src/cli/main.js"]
