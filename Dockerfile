FROM python:3.11-slim

WORKDIR /srv/localforce
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    LOCALFORCE_HOST=0.0.0.0 LOCALFORCE_PORT=8000 LOCALFORCE_DATA_DIR=/data

COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY migrations ./migrations
COPY seed ./seed
# The openenv extra: the image serves /openenv too.
RUN pip install --no-cache-dir -e '.[openenv]'

VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=5 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/services/data')"
CMD ["localforce", "serve"]
