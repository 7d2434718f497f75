"""Is a Hugging Face model usable here, now? Answered in about a second, before any model library loads.

sentence-transformers asked for a model that is neither a local folder nor in
the Hugging Face cache tries the hub, with retries, for about a minute when
there is no network. :func:`require_model` answers first: a local folder or a
cached model is fine; otherwise the hub must be reachable (``HF_HUB_OFFLINE=1``
says it is not; else one HTTP request to the hub, through the HTTPS proxy
if one is set, must be answered within one second), or it raises :class:`~ragtune.errors.ConfigError`
naming the model and the fixes.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ConfigError

__all__ = ["hub_offline_reason", "model_cached", "require_model"]

CONNECT_TIMEOUT_S = 1.0
_TRUE = {"1", "true", "yes", "on"}


def model_cached(model: str) -> bool:
    """Whether ``model`` (a hub id) has a ``config.json`` in the local Hugging Face cache."""
    try:
        from huggingface_hub import constants, try_to_load_from_cache
    except ImportError:
        return False
    # read the environment now: huggingface_hub reads it once, at import
    cache_dir = os.environ.get("HF_HUB_CACHE") or (os.path.join(os.environ["HF_HOME"], "hub")
                                                    if os.environ.get("HF_HOME") else constants.HF_HUB_CACHE)
    for filename in ("config.json", "modules.json"):
        try:
            found = try_to_load_from_cache(model, filename, cache_dir=cache_dir)
        except Exception:  # an id the hub would reject (bad characters): not cached
            return False
        if isinstance(found, str) and os.path.isfile(found):
            return True
    return False


def _answers(url: str, timeout: float) -> bool:
    """Whether an HTTP(S) request to ``url`` gets any HTTP response (proxy settings honoured) within ``timeout``."""
    import urllib.error
    import urllib.request

    ok = threading.Event()

    def attempt() -> None:
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
            ok.set()
        except urllib.error.HTTPError:  # an HTTP status is an answer: the hub is there
            ok.set()
        except (OSError, ValueError):
            pass

    t = threading.Thread(target=attempt, daemon=True)  # DNS lookups ignore socket timeouts: bound it here
    t.start()
    t.join(timeout + 0.25)
    return ok.is_set()


def hub_offline_reason(timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why the Hugging Face hub cannot be reached (None: it answered an HTTP request within ``timeout``).

    A TCP connect alone proves nothing behind a transparent gateway, so this asks for an HTTP answer."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"{var}=1 is set"
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    if not urlsplit(endpoint).hostname:
        return f"cannot tell where the hub is (HF_ENDPOINT={endpoint!r})"
    if _answers(endpoint + "/api/status", timeout):
        return None
    proxy = next((os.environ[v] for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
                  if os.environ.get(v)), None)
    via = f" through the proxy {urlsplit(proxy if '://' in proxy else 'http://' + proxy).netloc}" if proxy else ""
    return f"{urlsplit(endpoint).netloc}{via} did not answer within {timeout:g} s"


def require_model(model: str, *, what: str, flag: str) -> bool:
    """Check that ``model`` can load: a local folder, a cached hub model, or a reachable hub; otherwise raise
    :class:`ConfigError` in about a second. ``what`` names the component, ``flag`` how a folder is passed
    (``--rerank-model `` with its space, ``--embedder st:``).

    Returns True when the model must load from local files only (cached, hub unreachable), so the model
    library does not spend its timeouts on the network."""
    if Path(model).expanduser().is_dir():
        return False
    if model.startswith((".", "/", "~")) or os.sep in model.strip("/").replace("/", "", 1):
        raise ConfigError(f"{what} {model!r}: no such folder; pass a folder holding the model ({flag}/path/to/model)")
    cached = model_cached(model)
    reason = hub_offline_reason()
    if reason is None or cached:
        return reason is not None
    raise ConfigError(
        f"{what} {model!r} is not in the local Hugging Face cache and the hub is unreachable ({reason}); "
        f"download it where there is network (`hf download {model}`, then copy the Hugging Face cache folder, "
        f"~/.cache/huggingface/hub, to this machine) or pass a local folder holding the model ({flag}/path/to/model)"
    )
