#!/bin/sh
# The review job of a roofline configuration, as CI runs it: the GitHub
# Actions workflow (github-actions.yml) and the GitLab CI job (gitlab-ci.yml)
# both run exactly this, and internal/e2e's TestCIExample runs it too.
#
#   review.sh DIR [SNAPSHOT]
#
# DIR is the configuration, SNAPSHOT the GPU host's snapshot in it (default
# host.json). Writes plan.md (the pull request comment) in the current
# directory. Exits 0 when the plan is fine to merge (no changes, or changes
# without downtime), 1 on an error (invalid or unformatted files, a plan
# error), 4 when the plan replaces a server with downtime or destroys one.
set -u
dir=${1:?usage: review.sh DIR [SNAPSHOT]}
snapshot=${2:-host.json}
export ROOFLINE_IN_AUTOMATION=1

roofline -chdir="$dir" validate -no-color || exit 1
roofline -chdir="$dir" fmt -check -diff -no-color || { echo "Run roofline fmt in $dir."; exit 1; }

rc=0
roofline -chdir="$dir" plan -review -snapshot="$snapshot" -format=markdown \
  -detailed-exitcode -fail-on=downtime,destroy -no-color -input=false > plan.md || rc=$?
case $rc in
  0) echo "roofline: no changes." ;;
  2) echo "roofline: changes without downtime; see plan.md." ;;
  4) echo "roofline: the plan takes a server down or destroys one; see plan.md." ;;
  *) echo "roofline: plan failed (exit $rc); see plan.md and the log above." ;;
esac
[ "$rc" -eq 2 ] && rc=0
exit "$rc"
