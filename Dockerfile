# gw as a container image: gw serve on 0.0.0.0:8787, as a non-root user, state in a volume.
#
#   docker build -t gw .
#   docker run -d --name gw -p 8787:8787 -v gw-state:/var/lib/gw \
#     -e GW_ADMIN_KEY="$(openssl rand -base64 32)" gw
#
# Safe by default: bound beyond loopback, gw runs in keys mode, so every request needs the
# admin key or an API key (`docker exec gw gw keys create --tenant default`), and gw
# refuses to start without GW_ADMIN_KEY (32+ characters). container/gw.yaml is the config (the mock);
# mount a directory of your own over /etc/gw for real providers. ./scripts/build-image
# builds this and smoke-tests it where a container engine runs.
#
# PYTHON_IMAGE: any CPython 3.11-3.13 Debian image (a mirror's, where Docker Hub is not
# reachable). Every dependency is installed from requirements/runtime.lock, hash-checked:
# what ./scripts/test tests is what the image runs.
ARG PYTHON_IMAGE=python:3.13-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# gw's wheel, built with the setuptools version scripts/build-zipapp pins.
RUN pip install --no-cache-dir --disable-pip-version-check setuptools==84.2.1
WORKDIR /src
COPY pyproject.toml README.md LICENSE CHANGELOG.md MANIFEST.in ./
COPY gw ./gw
RUN pip wheel --no-cache-dir --disable-pip-version-check --no-deps --no-build-isolation \
      --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="gw" \
      org.opencontainers.image.description="A local-first LLM gateway" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY requirements/runtime.lock /tmp/runtime.lock
RUN pip install --no-cache-dir --disable-pip-version-check --require-hashes \
      -r /tmp/runtime.lock \
    && rm /tmp/runtime.lock
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-cache-dir --disable-pip-version-check --no-deps /tmp/wheels/*.whl \
    && rm -r /tmp/wheels

# A fixed numeric uid, so runAsNonRoot checks (Kubernetes) can verify it without /etc/passwd.
RUN groupadd --system --gid 10001 gw \
    && useradd --system --uid 10001 --gid gw --home-dir /var/lib/gw --shell /usr/sbin/nologin gw \
    && install --directory --owner gw --group gw --mode 0700 /var/lib/gw
COPY container/gw.yaml /etc/gw/gw.yaml
COPY container/healthcheck.py /usr/local/lib/gw/healthcheck.py

ENV GW_HOME=/var/lib/gw \
    GW_CONFIG=/etc/gw/gw.yaml \
    GW_HOST=0.0.0.0 \
    PYTHONUNBUFFERED=1
VOLUME ["/var/lib/gw"]
USER 10001:10001
EXPOSE 8787
# /readyz: a config is loaded and the state store can be written (container/healthcheck.py).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "/usr/local/lib/gw/healthcheck.py"]
# gw stops on SIGTERM after draining requests for up to server.drain_timeout (30 s):
# `docker stop -t 35` gives it that time (docker's default is 10 s, then SIGKILL).
STOPSIGNAL SIGTERM
ENTRYPOINT ["gw"]
CMD ["serve"]
