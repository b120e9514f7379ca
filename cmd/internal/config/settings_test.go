package config

import (
	"strings"
	"testing"
)

func TestSettingsHideSecrets(t *testing.T) {
	t.Parallel()
	e := &Env{DatabaseURL: "postgres://app:s3cret-pw@db:5432/postgram?sslmode=require&password=other-secret",
		EmbeddingAPIKey: "sk-live-very-secret", KeyPepper: "pepper-secret", EmbeddingProvider: "openai", Port: 3100, Bind: "127.0.0.1",
		Extraction: Extraction{APIKey: "anthropic-secret", BaseURL: "https://u:pw-secret@llm.example/v1"}}
	all := ""
	for _, s := range e.Settings() {
		all += s.Name + "=" + s.Value + "\n"
	}
	for _, leak := range []string{"s3cret-pw", "other-secret", "sk-live-very-secret", "pepper-secret", "anthropic-secret", "pw-secret"} {
		if strings.Contains(all, leak) {
			t.Errorf("settings show the secret %q:\n%s", leak, all)
		}
	}
	for _, want := range []string{"EMBEDDING_API_KEY=(set, hidden)", "QUERY_EMBEDDING_CACHE_SECRET=(not set)", "store=PostgreSQL",
		"DATABASE_URL=postgres://app:hidden@db:5432/postgram?", "EMBEDDING_PROVIDER=openai"} {
		if !strings.Contains(all, want) {
			t.Errorf("settings lack %q:\n%s", want, all)
		}
	}
}
