package main

import "strings"

// parseExports reads `export K=V` lines (scripts/local.sh env).
func parseExports(s string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
		if k, v, ok := strings.Cut(line, "="); ok && k != "" {
			env[k] = strings.Trim(v, `"'`)
		}
	}
	return env
}
