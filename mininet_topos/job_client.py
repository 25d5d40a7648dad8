"""The few job-API calls the topology tools make (standard library only)."""
import json
import urllib.error
import urllib.request


class JobApiError(RuntimeError):
    pass


def call(api_addr: str, method: str, path: str, body=None, timeout=10.0) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://{api_addr}/v1{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as err:
        try:
            detail = json.loads(err.read()).get("error", {}).get("message", "")
        except ValueError:
            detail = ""
        raise JobApiError(f"{method} {path}: HTTP {err.code} {detail}") from None
    except OSError as err:
        raise JobApiError(f"{method} {path}: controller at {api_addr} unreachable: {err}") from None


def create_job(api_addr: str, name: str, workers: int, mode: str = "dense", **extra) -> dict:
    return call(api_addr, "POST", "/jobs", {"name": name, "workers": workers, "mode": mode, **extra})


def get_job(api_addr: str, name: str) -> dict:
    return call(api_addr, "GET", f"/jobs/{name}")


def list_jobs(api_addr: str) -> list:
    return call(api_addr, "GET", "/jobs").get("jobs", [])
