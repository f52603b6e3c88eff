package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestMutantsApply checks that every mutant still finds the code it
// changes, once, in the tree as it is: a mutant whose code moved would stop
// the mutation check at that mutant.
func TestMutantsApply(t *testing.T) {
	for _, m := range mutants {
		src, err := os.ReadFile(filepath.Join("..", "..", m.file))
		if err != nil {
			t.Fatal(err)
		}
		pairs := append([]string{m.old, m.new}, m.more...)
		for i := 0; i+1 < len(pairs); i += 2 {
			if n := bytes.Count(src, []byte(pairs[i])); n != 1 {
				t.Errorf("mutant %s: %q occurs %d times in %s, want once", m.name, pairs[i], n, m.file)
			}
			src = bytes.Replace(src, []byte(pairs[i]), []byte(pairs[i+1]), 1)
		}
	}
}
