# Sourced by the ci/ scripts: one Cargo target directory outside the clone, so
# BoringSSL (3-5 minutes to build) is built once per machine, not per clone.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mpquic/target}"
mkdir -p "$CARGO_TARGET_DIR"
