#!/usr/bin/env bash
# Gather the tables each benchmark wrote (bench/results/RESULTS_*.md) into bench/results/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/results"
{
  echo "# Benchmark results"
  echo
  echo "Each section is the table its script printed and wrote to \`bench/results/RESULTS_<name>.md\`, with the machine it ran on."
  echo "Re-run a script (\`.venv/bin/python bench/<area>/<name>_bench.py\`), then \`bash bench/collect_results.sh\`."
  for name in store checkpoint archive locomo hybrid ingest session crash; do
    if [ -f "RESULTS_${name}.md" ]; then
      echo
      echo "---"
      echo
      # Demote each section's headings one level under this file's title.
      sed -e 's/^#/##/' "RESULTS_${name}.md"
    fi
  done
} > RESULTS.md
