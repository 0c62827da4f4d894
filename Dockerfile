# Builds the notifiable executable and runs it on a slim image.
FROM swift:6.3-bookworm AS build
WORKDIR /src
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product notifiable --static-swift-stdlib \
 && cp "$(swift build -c release --show-bin-path)/notifiable" /notifiable \
 && cp -r "$(swift build -c release --show-bin-path)/NotifiableServer_NotifiableApp.resources" /resources

FROM debian:bookworm-slim
# openssl: the sandbox mode's built-in gateways make their TLS certificate with it.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates tzdata openssl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /app notifiable
WORKDIR /app
COPY --from=build /notifiable /app/notifiable
# The OpenAPI document, found beside the executable.
COPY --from=build /resources /app/NotifiableServer_NotifiableApp.resources
COPY Migrations /app/Migrations
USER notifiable
ENV HOST=0.0.0.0 PORT=8080 NOTIFIABLE_MIGRATIONS_DIR=/app/Migrations
EXPOSE 8080
ENTRYPOINT ["/app/notifiable"]
CMD ["serve"]
