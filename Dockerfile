# mcpwarden images. Two targets share one static build:
#
#   docker build -t mcpwarden .                       # default: distroless, ~the binary alone
#   docker build --target node -t mcpwarden:node .    # with Node.js, for npx-launched upstreams
#
# Run: docker run -p 8765:8765 -e MCPWARDEN_TOKEN=... \
#        -v $PWD/mcpwarden.yaml:/etc/mcpwarden/mcpwarden.yaml:ro mcpwarden
# (listen on 0.0.0.0:8765 in that config; a non-loopback listen requires
# auth.bearer_token_env.) The default image has no shell and no Node.js: it
# runs remote (url) upstreams and static binaries only.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# grpcnotrace: leave out grpc's golang.org/x/net/trace, whose templates keep
# every exported method in the binary (31 MB instead of 20, 3.5 MB more idle
# RSS). mcpwarden runs no gRPC. bench/build.go builds with the same flags.
RUN CGO_ENABLED=0 go build -trimpath -tags=grpcnotrace -ldflags="-s -w" -o /out/mcpwarden ./cmd/mcpwarden

# For stdio upstreams started with npx: Node.js 20, run as the image's
# non-root "node" user.
FROM node:20-bookworm-slim AS node
COPY --from=build /out/mcpwarden /usr/local/bin/mcpwarden
USER node
WORKDIR /home/node
EXPOSE 8765
ENTRYPOINT ["mcpwarden"]
CMD ["serve", "--config", "/etc/mcpwarden/mcpwarden.yaml"]

# The default target (last stage): the static binary on distroless, as the
# non-root user 65532.
FROM gcr.io/distroless/static-debian12:nonroot AS static
COPY --from=build /out/mcpwarden /usr/local/bin/mcpwarden
USER nonroot:nonroot
EXPOSE 8765
ENTRYPOINT ["/usr/local/bin/mcpwarden"]
CMD ["serve", "--config", "/etc/mcpwarden/mcpwarden.yaml"]
