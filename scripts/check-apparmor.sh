#!/usr/bin/env bash
# Checks that policy/apparmor/lnk parses, with Debian's own AppArmor parser, without loading it.
#
# The `userns` rule the profile needs is AppArmor 4 (abi/4.0). Debian 12's parser is 3.0, so
# this fetches Debian 13's `apparmor` package and the C library it was built against into a
# scratch folder (nothing is installed, and the system's APT sources are not touched) and runs
# that parser with that library. Where the system's own parser is 4 or later, it is used.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=$PWD/policy/apparmor/lnk

if command -v apparmor_parser >/dev/null && apparmor_parser --version | grep -qE 'version [4-9]'; then
  apparmor_parser --skip-kernel-load --skip-cache "$profile"
  echo "apparmor profile parses ($(apparmor_parser --version | head -n 1))"
  exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/lists/partial" "$scratch/cache/archives/partial"
echo "deb http://deb.debian.org/debian trixie main" > "$scratch/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$scratch/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$scratch/lists" -o "Dir::Cache=$scratch/cache"
          -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
apt-get "${apt_opts[@]}" -qq update
(cd "$scratch" && apt-get "${apt_opts[@]}" -qq download apparmor libc6)
for deb in "$scratch"/*.deb; do
  dpkg-deb -x "$deb" "$scratch/root"
done
root=$scratch/root
"$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$root/usr/lib/x86_64-linux-gnu" \
  "$root/usr/sbin/apparmor_parser" --skip-kernel-load --skip-cache \
  --base "$root/etc/apparmor.d" --Include "$root/etc/apparmor.d" "$profile"
# And it must fail on a broken profile, or the check above proves nothing.
sed 's/userns,/usrns,/' "$profile" > "$scratch/broken"
if "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$root/usr/lib/x86_64-linux-gnu" \
  "$root/usr/sbin/apparmor_parser" --skip-kernel-load --skip-cache \
  --base "$root/etc/apparmor.d" --Include "$root/etc/apparmor.d" "$scratch/broken" 2>/dev/null; then
  echo "the parser accepted a broken profile: the check is not checking" >&2
  exit 1
fi
echo "apparmor profile parses (Debian 13's apparmor_parser)"
