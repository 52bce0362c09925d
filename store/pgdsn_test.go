package store

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// redactCases are connection strings and how messages show them (#22:
// OpenPostgres names its database in every error, never with a password).
var redactCases = []struct{ dsn, want string }{
	// URLs.
	{"postgres://alice:hunter2@db.example.com:5432/rmcp?sslmode=require", "postgres://alice:[redacted]@db.example.com:5432/rmcp?sslmode=require"},
	{"postgresql://alice@db/rmcp?password=hunter2&sslmode=disable", "postgresql://alice@db/rmcp?password=[redacted]&sslmode=disable"},
	{"postgres://db/rmcp?sslpassword=hunter2", "postgres://db/rmcp?sslpassword=[redacted]"},
	{"postgres://db/rmcp?pass%77ord=hunter2", "postgres://db/rmcp?pass%77ord=[redacted]"},
	{"postgres://db/rmcp?Password=hunter2", "postgres://db/rmcp?Password=[redacted]"},
	{"postgres://db/rmcp?password=hunter2;x", "postgres://db/rmcp?password=[redacted]"},
	{"postgres://alice:hunter2%zz@db/rmcp", "postgres://alice:[redacted]@db/rmcp"},
	{"postgres://alice:hun:ter2@db/rmcp", "postgres://alice:[redacted]@db/rmcp"},
	{"postgres://alice:hunter2?@db/rmcp", "postgres://alice:[redacted]@db/rmcp"},
	{"postgres://alice:hunter2@[::1]:5432,[::2]/rmcp?password=hunter3", "postgres://alice:[redacted]@[::1]:5432,[::2]/rmcp?password=[redacted]"},
	{"postgres://[::1?]/rmcp?password=hunter2", "postgres://[::1?]/rmcp?password=[redacted]"},
	{"postgres://alice:@db/rmcp?password=", "postgres://alice:@db/rmcp?password="},
	{"postgres:///rmcp?host=/tmp/pg&user=postgres", "postgres:///rmcp?host=/tmp/pg&user=postgres"},
	{"postgres://h1:5432,h2:5433/rmcp?application_name=a@b", "postgres://h1:5432,h2:5433/rmcp?application_name=a@b"},
	// Not shown: pgx refuses them, or a password landed outside its place.
	{"postgres://alice:hunter@2@db/rmcp", unshownDSN},
	{"postgres://alice:hunter2@db/rm@cp", unshownDSN},
	{"postgres://db/rmcp?password", unshownDSN},
	{"postgres://db/rmcp?password=a=hunter2", unshownDSN},
	{"postgres://db/rmcp?pass%zzword=hunter2", unshownDSN},
	{"postgres://[::1/rmcp?password=hunter2", unshownDSN},
	{"POSTGRES://alice:hunter2@db/rmcp", unshownDSN},
	{" postgres://alice:hunter2@db/rmcp", unshownDSN},
	{"mysql://alice:hunter2@db/rmcp?x=y", unshownDSN},
	{"postgres://alice:hunter2@db/rmcp\x00", unshownDSN},
	// key=value.
	{"host=db user=alice password=hunter2 dbname=rmcp", "host=db user=alice password=[redacted] dbname=rmcp"},
	{"host=db password='hunter2 with spaces' dbname=rmcp", "host=db password='[redacted]' dbname=rmcp"},
	{"host=db password = hunter2 dbname=rmcp", "host=db password = [redacted] dbname=rmcp"},
	{"host=db\tpassword=\n'hunter2'  dbname=rmcp ", "host=db\tpassword=\n'[redacted]'  dbname=rmcp "},
	{`password=hunter\ 2 host=db`, "password=[redacted] host=db"},
	{`password='hunter\'2' host=db`, "password='[redacted]' host=db"},
	{`password=hunter2\`, "password=[redacted]"},
	{"sslpassword=hunter2 sslkey=/k", "sslpassword=[redacted] sslkey=/k"},
	{"password= host=db", "password= [redacted]"}, // pgx reads the password "host=db"
	{"password='' host=db", "password='' host=db"},
	{"host=/tmp/pg dbname=rmcp", "host=/tmp/pg dbname=rmcp"},
	{"", ""},
	{"host=db password='hunter2", unshownDSN},
	{`host=db password='hunter2\`, unshownDSN},
	{"host=db hunter2", unshownDSN},
	{"host=db pass word=hunter2", unshownDSN},
	{"=hunter2", unshownDSN},
}

func TestRedactDSN(t *testing.T) {
	for _, tc := range redactCases {
		got := redactDSN(tc.dsn)
		if got != tc.want {
			t.Errorf("redactDSN(%q)\n got %q\nwant %q", tc.dsn, got, tc.want)
		}
		if strings.Contains(got, "hunter") {
			t.Errorf("redactDSN(%q) = %q shows the password", tc.dsn, got)
		}
	}
}

// FuzzRedactDSN: whatever pgx reads as the password of a connection
// string never appears in redactDSN's result, which pgx reads as the
// same connection with the password [redacted]; and redacting twice
// changes nothing.
func FuzzRedactDSN(f *testing.F) {
	for _, tc := range redactCases {
		f.Add(tc.dsn)
	}
	// pgx's defaults must not supply a password the string does not hold.
	f.Setenv("PGPASSWORD", "")
	f.Setenv("PGPASSFILE", filepath.Join(f.TempDir(), "no-passfile"))
	f.Setenv("PGSERVICEFILE", filepath.Join(f.TempDir(), "no-servicefile"))
	f.Setenv("PGSERVICE", "")
	f.Fuzz(func(t *testing.T, dsn string) {
		out := redactDSN(dsn)
		if again := redactDSN(out); again != out {
			t.Fatalf("redactDSN(%q) = %q, but redacting that gives %q", dsn, out, again)
		}
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil || out == unshownDSN {
			return
		}
		// The password, if it is written once and unescaped (so its one
		// occurrence is where pgx found it), is gone. An occurrence
		// across the edge of a [redacted] would hold '[' or ']'.
		if pw := cfg.Password; len(pw) >= 3 && strings.Count(dsn, pw) == 1 && !strings.ContainsAny(dsn, `%\`) &&
			!strings.ContainsAny(pw, "[]") && strings.Contains(out, pw) {
			t.Fatalf("redactDSN(%q) = %q shows the password %q", dsn, out, pw)
		}
		// The rest is the same connection.
		red, err := pgconn.ParseConfig(out)
		if err != nil {
			t.Fatalf("redactDSN(%q) = %q, which pgx cannot parse: %v", dsn, out, err)
		}
		if red.Host != cfg.Host || red.Port != cfg.Port || red.Database != cfg.Database || red.User != cfg.User {
			t.Fatalf("redactDSN(%q) = %q: %s:%d/%s as %s, was %s:%d/%s as %s", dsn, out,
				red.Host, red.Port, red.Database, red.User, cfg.Host, cfg.Port, cfg.Database, cfg.User)
		}
		if red.Password != "" && red.Password != redacted {
			t.Fatalf("redactDSN(%q) = %q: pgx reads the password %q", dsn, out, red.Password)
		}
	})
}
