package riverjobs_test

import (
	"testing"

	"github.com/qms-dev/qms/test/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
