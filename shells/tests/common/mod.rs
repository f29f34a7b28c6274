//! Shell-script pieces shared by the tests that run servers inside the shells.

/// `wait_serving PID LOG`: waits until the server PID says "serving" in LOG; exits
/// the script with 90 and the log if it dies or takes more than 10 s.
pub const WAIT_SERVING: &str = r#"
wait_serving() {
    i=0
    until grep -q serving "$2" 2>/dev/null; do
        i=$((i + 1))
        if [ "$i" -gt 200 ] || ! kill -0 "$1" 2>/dev/null; then
            echo "the server did not start" >&2; cat "$2" >&2; exit 90
        fi
        sleep 0.05
    done
}
"#;
