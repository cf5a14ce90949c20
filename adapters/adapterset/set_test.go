package adapterset_test

import (
	"testing"

	"github.com/qms-dev/qms/adapters/adapterset"
	"github.com/qms-dev/qms/adapters/memory"
)

func TestMemorySetFillsEveryPort(t *testing.T) {
	s, err := adapterset.Memory(memory.NewStore(), adapterset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Missing(); len(m) > 0 {
		t.Fatalf("the memory set leaves ports empty: %v", m)
	}
}
