# Builds the notifiable executable and runs it on a slim image, as a user without privileges.
FROM swift:6.3-bookworm AS build
WORKDIR /src
COPY Package.swift ./
# The exact versions the project is tested with (deploy/pinned-versions.resolved, kept equal to the test
# build's by ContainerFilesTests): every image build resolves the same, or fails saying why.
COPY deploy/pinned-versions.resolved ./Package.resolved
RUN swift package resolve --force-resolved-versions
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product notifiable --static-swift-stdlib \
 && cp "$(swift build -c release --show-bin-path)/notifiable" /notifiable \
 && mkdir /resources \
 && cp -r "$(swift build -c release --show-bin-path)/NotifiableServer_NotifiableApp.resources" \
          "$(swift build -c release --show-bin-path)/NotifiableServer_NotifiableStore.resources" /resources/

FROM debian:bookworm-slim
# openssl: the sandbox mode's built-in gateways make their TLS certificate with it.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates tzdata openssl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /app notifiable
WORKDIR /app
COPY --from=build /notifiable /app/notifiable
# The OpenAPI document and the stored function files, found beside the executable.
COPY --from=build /resources/ /app/
COPY Migrations /app/Migrations
USER notifiable
ENV HOST=0.0.0.0 PORT=8080 NOTIFIABLE_MIGRATIONS_DIR=/app/Migrations
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/app/notifiable", "health"]
ENTRYPOINT ["/app/notifiable"]
CMD ["serve"]
