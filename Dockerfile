FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1

RUN useradd --create-home --uid 10001 haul
WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY connectors ./connectors
COPY state ./state
COPY pipelines ./pipelines
COPY sandbox ./sandbox
RUN pip install .

USER haul
WORKDIR /home/haul
ENTRYPOINT ["haul"]
CMD ["--help"]
