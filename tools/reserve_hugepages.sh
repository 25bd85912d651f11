#!/usr/bin/env bash
# Reserve a hugetlb page pool so that runs with memory.pages = "hugetlb" get huge pages
# instead of falling back to thp. The pool is system-wide and stays until changed or
# the machine reboots; `tools/reserve_hugepages.sh 0` gives the pages back.
#
# usage: tools/reserve_hugepages.sh [COUNT] [SIZE]
#   COUNT  pages to have in the pool (absolute, not added); omitted: only show the state
#   SIZE   2M (default) or 1G, i.e. memory.hugepage_size
# Needs root to change the pool. Exit status: 0 done, 1 bad use or not root, 2 the kernel
# reserved fewer pages than asked (memory too fragmented).
set -euo pipefail

die() {
  echo "reserve_hugepages: error: $*" >&2
  exit 1
}

count="${1:-}"
size="${2:-2M}"
case "$size" in
  2M | 2m | 2MB | 2MiB | 2mib | 2048K | 2048k | 2048kB) kb=2048 ;;
  1G | 1g | 1GB | 1GiB | 1gib | 1024M | 1024m) kb=1048576 ;;
  *) die "SIZE must be 2M or 1G, not '$size' (usage: $0 [COUNT] [2M|1G])" ;;
esac
if [[ -n "$count" && ! "$count" =~ ^[0-9]+$ ]]; then
  die "COUNT must be a whole number of pages, not '$count' (usage: $0 [COUNT] [2M|1G])"
fi

dir="/sys/kernel/mm/hugepages/hugepages-${kb}kB"
if [[ ! -d "$dir" ]]; then
  offered=$(ls /sys/kernel/mm/hugepages 2>/dev/null | sed 's/hugepages-//' | tr '\n' ' ')
  die "this kernel offers no ${size} huge pages (offered: ${offered:-none})"
fi

show() {
  echo "$1:"
  grep -E '^(HugePages_|Hugepagesize|Hugetlb)' /proc/meminfo | sed 's/^/  /'
  for f in nr_hugepages free_hugepages resv_hugepages surplus_hugepages; do
    printf '  %-28s %s\n' "${size} ${f}:" "$(cat "$dir/$f")"
  done
}

show "before"
[[ -z "$count" ]] && exit 0
[[ "$(id -u)" -eq 0 ]] || die "must run as root to write $dir/nr_hugepages (try: sudo $0 $count $size)"
echo "$count" >"$dir/nr_hugepages" || die "cannot write $dir/nr_hugepages"
show "after"
got=$(cat "$dir/nr_hugepages")
if ((got < count)); then
  echo "reserve_hugepages: warning: the kernel reserved ${got} of ${count} ${size} pages (memory" \
    "fragmented); retry after 'echo 3 > /proc/sys/vm/drop_caches; echo 1 >" \
    "/proc/sys/vm/compact_memory', or reserve at boot (hugepages=N on the kernel command line)" >&2
  exit 2
fi
echo "reserved ${got} ${size} pages ($((got * kb / 1024)) MiB) in the hugetlb pool"
