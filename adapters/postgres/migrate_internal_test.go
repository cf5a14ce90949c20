package postgres

import (
	"testing"
	"testing/fstest"
)

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	migs, err := loadMigrations(fstest.MapFS{
		"migrations/0010_later.up.sql":    file("SELECT 10"),
		"migrations/0002_second.up.sql":   file("SELECT 2"),
		"migrations/0002_second.down.sql": file("-- ignored"),
		"migrations/0001_first.up.sql":    file("SELECT 1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, m := range migs {
		got = append(got, m.version)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 10 {
		t.Fatalf("versions = %v, want [1 2 10]", got)
	}

	for name, fsys := range map[string]fstest.MapFS{
		"bad name":          {"migrations/create_things.sql": file("")},
		"duplicate version": {"migrations/0003_a.up.sql": file(""), "migrations/0003_b.up.sql": file("")},
	} {
		if _, err := loadMigrations(fsys); err == nil {
			t.Errorf("%s: no error", name)
		}
	}

	// The shipped set itself must load.
	if _, err := loadMigrations(migrationFiles); err != nil {
		t.Fatal(err)
	}
}
