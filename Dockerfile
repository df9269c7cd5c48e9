# mcpwarden with Node.js, so stdio upstreams started with npx work inside the
# container. Build: docker build -t mcpwarden .
# Run:   docker run -p 8765:8765 -e MCPWARDEN_TOKEN=... -v $PWD/mcpwarden.yaml:/etc/mcpwarden/mcpwarden.yaml mcpwarden
# (listen on 0.0.0.0:8765 in that config; a non-loopback listen requires auth.bearer_token_env.)
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/mcpwarden ./cmd/mcpwarden

FROM node:20-bookworm-slim
COPY --from=build /out/mcpwarden /usr/local/bin/mcpwarden
USER node
WORKDIR /home/node
ENTRYPOINT ["mcpwarden"]
CMD ["serve", "--config", "/etc/mcpwarden/mcpwarden.yaml"]
