# haul as a container: `docker run IMAGE <command> ...` runs `haul <command> ...` as an
# unprivileged user. Mount the staging store's folder at /data and the exports' at /exports
# (a config at /config/haul.toml with [staging] path = "/data/haul.db"); tokens come in as
# environment variables (-e HAUL_SOURCE_TOKEN), never in the image or the config:
#
#   docker run --rm -e HAUL_SOURCE_TOKEN -v haul-staging:/data -v "$PWD/exports:/exports" \
#     -v "$PWD/haul.toml:/config/haul.toml:ro" IMAGE export --config /config/haul.toml --out /exports
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1

RUN useradd --create-home --uid 10001 haul
WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY connectors ./connectors
COPY state ./state
COPY pipelines ./pipelines
COPY sandbox ./sandbox
# haul.orchestrate; an image for Dagster workers installs '.[dagster]' instead of '.'
COPY orchestrate ./orchestrate
RUN pip install .

# owned by haul before they become volumes, so a fresh named volume is writable too
RUN mkdir -p /data /exports && chown haul:haul /data /exports
VOLUME ["/data", "/exports"]

USER haul
WORKDIR /home/haul
ENTRYPOINT ["haul"]
CMD ["--help"]
