"""Which state backend the running `pulumi` uses, as far as a stack program can tell.

A StackReference names a stack as its backend parses it. A DIY backend (a file, S3, GCS, Azure
Blob or Postgres URL) always reports the organization `organization` and takes a bare stack name
on both of its layouts (the legacy layout takes nothing else: pulumi v3.276.0 pkg/backend/diy/
store.go legacyReferenceStore.ParseReference; the project layout infers `organization` and the
current project, projectReferenceStore.ParseReference). Pulumi Cloud resolves a bare name in the
user's default organization, which need not be the stack's, so it gets the full name, also for an
organization that is literally named `organization`.

The backend is the one `pulumi` itself picks (pkg/workspace/creds.go GetCurrentCloudURLWithSource):
PULUMI_BACKEND_URL, else the project file's `backend.url`, else the `current` of
`$PULUMI_HOME/credentials.json` (`~/.pulumi` without PULUMI_HOME); none is Pulumi Cloud.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import pulumi
import yaml

DIY_ORGANIZATION = "organization"
BACKEND_URL_ENV = "PULUMI_BACKEND_URL"
PULUMI_HOME_ENV = "PULUMI_HOME"
PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")
# The DIY backend's bucket schemes (gocloud.dev blob's default URL mux as pulumi registers it:
# pkg/backend/diy/backend.go IsDIYBackendURL; postgres: pkg/backend/diy/postgres/backend.go).
DIY_SCHEMES = frozenset({"file", "mem", "s3", "gs", "azblob", "postgres"})


def _project_backend_url(project_dir: Path) -> str:
    for name in PROJECT_FILES:
        path = project_dir / name
        if path.is_file():
            project = yaml.safe_load(path.read_text()) or {}
            backend = project.get("backend") if isinstance(project, dict) else None
            return str(backend.get("url") or "") if isinstance(backend, dict) else ""
    return ""


def _stored_backend_url() -> str:
    home = os.environ.get(PULUMI_HOME_ENV) or str(Path.home() / ".pulumi")
    try:
        credentials = json.loads((Path(home) / "credentials.json").read_text())
    except (OSError, ValueError):
        return ""
    return str(credentials.get("current") or "") if isinstance(credentials, dict) else ""


def backend_url(project_dir: Path | None = None) -> str:
    """The backend URL `pulumi` uses for this project ("" when none is set: Pulumi Cloud)."""
    return (os.environ.get(BACKEND_URL_ENV) or _project_backend_url(project_dir or Path.cwd())
            or _stored_backend_url())


def is_diy(url: str) -> bool:
    return urlsplit(url).scheme in DIY_SCHEMES


def own_stack_name(project_dir: Path | None = None) -> str:
    """This stack, as a StackReference names it on the backend in use."""
    organization = pulumi.get_organization()
    if organization == DIY_ORGANIZATION and is_diy(backend_url(project_dir)):
        return pulumi.get_stack()
    return f"{organization}/{pulumi.get_project()}/{pulumi.get_stack()}"
