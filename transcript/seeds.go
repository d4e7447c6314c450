package transcript

import (
	"os"
	"path/filepath"
	"strings"
)

// ClientSections returns, for each transcript in dir, the lines of its
// client section as written, blank lines and # directives dropped: the
// fuzz tests' seeds, so that the fuzzer starts from real exchanges.
func ClientSections(dir string) ([][]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	var sections [][]string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		_, rest, _ := strings.Cut(string(data), "-- client --\n")
		client, _, _ := strings.Cut(rest, "-- server --\n")
		var lines []string
		for line := range strings.SplitSeq(client, "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			lines = append(lines, line)
		}
		sections = append(sections, lines)
	}
	return sections, nil
}
