#!/usr/bin/env bash
# The LiteLLM proxy's venv, for the gateway test (a real rate-limiting gateway in front of the
# project's local server): the proxy pulls a large dependency set users do not need. The
# requirements pin the whole resolved set, so every build is the same. Prints its python last.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
exec bash "$HERE/build_venv.sh" litellm "$HERE/litellm_requirements.txt"
