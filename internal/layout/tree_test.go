package layout

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// walkFiles calls fn with the path of every file below root for which keep
// (given the file's name) reports true, in every module of the repository;
// .git, node_modules and .tmp* directories are skipped.
func walkFiles(root string, keep func(name string) bool, fn func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" || strings.HasPrefix(name, ".tmp") {
				return filepath.SkipDir
			}
			return nil
		}
		if !keep(d.Name()) {
			return nil
		}
		return fn(path)
	})
}
