package synth

// The vocabulary of the synthetic organisation. Surnames and codenames are
// unique; first names repeat across people, as they do in real teams.

var firstNames = []string{
	"Dana", "Omar", "Priya", "Lena", "Marcus", "Yuki", "Tomas", "Ingrid", "Kwame", "Sofia",
	"Rahul", "Elena", "Jonas", "Amara", "Felix", "Hana", "Diego", "Nadia", "Victor", "Chloe",
	"Mateo", "Aisha", "Lukas", "Mei", "Andre", "Freya", "Samir", "Leah", "Oscar", "Zara",
	"Hugo", "Ines", "Theo", "Ruth", "Kenji", "Maya",
}

var lastNames = []string{
	"Whitfield", "Okafor", "Raman", "Lindqvist", "Delacroix", "Tanaka", "Ferreira", "Haugen",
	"Mensah", "Castellano", "Iyer", "Petrova", "Brandt", "Eze", "Kowalczyk", "Sato", "Morales",
	"Haddad", "Novak", "Beaumont", "Quintero", "Rahman", "Vogel", "Zhang", "Duarte", "Nilsen",
	"Karimi", "Abrams", "Lindgren", "Osei", "Marchetti", "Gallagher", "Yamamoto", "Sokolov",
	"Achterberg", "Oyelaran", "Pellegrini", "Szabo", "Fairweather", "Thorsen", "Mwangi",
	"Ellington", "Kaur", "Ashworth", "Vasquez", "Holmberg", "Nakamura", "Radcliffe",
}

var nicknames = map[string]string{
	"Dana": "Dee", "Marcus": "Marc", "Sofia": "Sof", "Elena": "Lena", "Victor": "Vic",
	"Samir": "Sam", "Theodore": "Theo", "Nadia": "Nad", "Kwame": "Kwa",
}

type role struct {
	title string
	focus string // what the person spends time on
}

var roles = []role{
	{"staff engineer", "architecture reviews and the hardest cross-team technical problems"},
	{"senior engineer", "backend services and code review"},
	{"product manager", "roadmaps, customer interviews and prioritisation"},
	{"product designer", "user research, prototypes and design systems"},
	{"site reliability engineer", "uptime, capacity planning and the on-call rotation"},
	{"data scientist", "experiments, forecasting and statistical models"},
	{"engineering manager", "hiring, career growth and delivery planning"},
	{"security engineer", "threat modelling, access reviews and vulnerability triage"},
	{"QA lead", "test plans, release sign-off and regression suites"},
	{"technical writer", "API references, tutorials and release notes"},
	{"support lead", "escalations, customer tickets and support tooling"},
	{"data engineer", "pipelines, warehouse models and data quality checks"},
	{"mobile engineer", "the iOS and Android apps"},
	{"frontend engineer", "the web client and accessibility"},
}

var teams = []string{"platform", "payments", "growth", "mobile", "data", "infrastructure", "security", "support"}

var cities = []string{"Lisbon", "Berlin", "Toronto", "Nairobi", "Osaka", "Austin", "Dublin", "Oslo", "Bangalore", "Melbourne", "Warsaw", "Montreal"}

var hobbies = []string{
	"trail running", "sourdough baking", "chess", "bouldering", "birdwatching", "woodworking",
	"sailing", "jazz piano", "urban sketching", "cycling", "pottery", "amateur astronomy",
}

// topic is an area of work two projects share.
type topic struct {
	phrase   string   // how people name it: "data retention policy"
	short    string   // a shorter name: "retention"
	terms    []string // words that come up when it is discussed
	decision string   // what was decided, as a clause after "we will"
	options  []string // alternatives considered
	risk     string
	metric   string // what success is measured by
	team     string
	prefix   string // ticket prefix
}

var topics = []topic{
	{"data retention policy", "retention", []string{"retention", "logs", "purge", "archive", "compliance", "deletion requests"},
		"keep raw event logs for 90 days and aggregated metrics for two years",
		[]string{"keep everything forever in cold storage", "delete raw logs after 30 days"},
		"deleting data that an audit later asks for", "the share of deletion requests closed within 30 days", "data", "DATA"},
	{"billing migration", "billing", []string{"invoices", "ledger", "proration", "reconciliation", "billing service"},
		"move invoices from the legacy ledger to the new billing service in three waves",
		[]string{"a single cut-over weekend", "running both ledgers in parallel for a quarter"},
		"double charging customers during the cut-over", "reconciliation mismatches per thousand invoices", "payments", "PAY"},
	{"search relevance", "relevance", []string{"ranking", "queries", "index", "synonyms", "click-through"},
		"rank results with a hybrid of keyword and vector scores",
		[]string{"keyword ranking with hand-tuned boosts", "a vendor search appliance"},
		"ranking regressions nobody notices until customers complain", "click-through on the first result", "platform", "SRCH"},
	{"mobile onboarding", "onboarding", []string{"signup", "screens", "push notifications", "activation", "tutorial"},
		"shorten the signup flow to three screens and defer permissions",
		[]string{"a video tutorial before signup", "keeping the five-screen flow and adding tips"},
		"losing the marketing consent step", "day-seven activation", "mobile", "MOB"},
	{"observability dashboards", "observability", []string{"dashboard", "alerts", "metrics", "traces", "service level objectives"},
		"standardise every service dashboard on service level objectives",
		[]string{"one dashboard per team with free-form panels", "buying a hosted observability suite"},
		"alert fatigue during the transition", "the share of incidents detected by an alert before a customer reports them", "infrastructure", "OBS"},
	{"API rate limiting", "rate limiting", []string{"quota", "throttling", "burst", "token bucket", "gateway"},
		"enforce token bucket limits per API key at the gateway",
		[]string{"fixed windows per IP address", "limits inside each service"},
		"blocking a large customer's legitimate batch jobs", "the number of overload incidents per quarter", "platform", "API"},
	{"incident response", "incidents", []string{"incident", "on-call", "paging", "postmortem", "runbook"},
		"adopt a single on-call rotation with a fifteen minute paging target",
		[]string{"team-by-team rotations", "a follow-the-sun rotation with an external vendor"},
		"burning out the people on call", "time to acknowledge a page", "infrastructure", "INC"},
	{"customer churn analysis", "churn", []string{"churn", "cohort", "usage signals", "retention curves", "forecast"},
		"build a weekly churn model from product usage signals",
		[]string{"a quarterly survey of cancelled accounts", "rules of thumb from the sales team"},
		"a model that nobody trusts enough to act on", "precision of the at-risk account list", "data", "DATA"},
	{"payment retries", "retries", []string{"card", "decline", "retry", "dunning", "backoff"},
		"retry failed card payments with exponential backoff for up to seven days",
		[]string{"a single retry after 24 hours", "asking customers to update their card at once"},
		"annoying customers with too many dunning emails", "recovered revenue from declined payments", "payments", "PAY"},
	{"single sign-on", "sso", []string{"SAML", "OIDC", "identity provider", "login", "session"},
		"support SAML and OIDC single sign-on for enterprise customers",
		[]string{"SAML only", "a third-party identity broker"},
		"locking administrators out of their own accounts", "enterprise deals blocked on sign-on", "security", "SEC"},
	{"cloud storage costs", "storage costs", []string{"bucket", "lifecycle rules", "storage class", "egress", "cost"},
		"move cold objects to infrequent access storage after 60 days",
		[]string{"compressing everything in place", "moving to a cheaper provider"},
		"retrieval fees wiping out the savings", "monthly storage spend", "infrastructure", "OPS"},
	{"release automation", "releases", []string{"canary", "pipeline", "rollback", "deploy", "feature flags"},
		"ship every merged change through a canary pipeline with automatic rollback",
		[]string{"weekly release trains", "manual approvals for every deploy"},
		"a flaky pipeline that blocks every team", "lead time from merge to production", "platform", "REL"},
}

var codenames = []string{
	"Lighthouse", "Bluebird", "Nimbus", "Kestrel", "Juniper", "Atlas", "Marigold", "Tundra",
	"Quartz", "Saffron", "Harbor", "Cobalt", "Falcon", "Ember", "Willow", "Orchid",
	"Granite", "Zephyr", "Meridian", "Sparrow", "Basalt", "Lantern", "Mosaic", "Pioneer",
}

// Task vocabulary: verbs and nouns in their base forms (content uses them
// so; inflection queries inflect them), and qualifiers that make each task
// distinct.
var taskVerbs = []string{
	"archive", "deploy", "migrate", "rotate", "export", "review", "document", "index",
	"schedule", "retire", "benchmark", "replace", "tune", "audit", "upgrade", "backfill",
	"validate", "rename", "monitor", "draft",
}

var taskNouns = []string{
	"dashboard", "invoice", "alert", "credential", "bucket", "webhook", "report", "queue",
	"replica", "certificate", "template", "endpoint", "cohort", "runbook", "token", "segment",
	"ledger", "partition", "snapshot", "query",
}

var taskQualifiers = []string{
	"stale", "regional", "nightly", "legacy", "shared", "customer", "internal", "weekly",
	"primary", "staging", "quarterly", "partner", "archived", "fallback", "experimental", "sandbox",
}

var weekdays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"}

var months = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

// Components of design documents, with the quantities their details name.
type component struct {
	name  string
	facts []string // "%d" takes a number
}

var components = []component{
	{"ingest workers", []string{"batch %d events per write", "flush every %d seconds", "run %d replicas per region"}},
	{"write-ahead log", []string{"rotate segments at %d megabytes", "keep %d segments on local disk"}},
	{"cache tier", []string{"hold %d gigabytes per node", "expire entries after %d minutes"}},
	{"scheduler", []string{"lease jobs for %d seconds", "retry a failed job %d times"}},
	{"replica lag alert", []string{"fire after %d seconds of lag", "page the on-call engineer after %d minutes"}},
	{"connection pool", []string{"open at most %d connections", "recycle idle connections after %d minutes"}},
	{"export job", []string{"write %d rows per file", "compress files above %d megabytes"}},
	{"webhook dispatcher", []string{"time out after %d seconds", "give up after %d attempts"}},
	{"feature flag service", []string{"cache flags for %d seconds", "evaluate %d rules per request at most"}},
	{"search indexer", []string{"commit every %d documents", "merge segments above %d megabytes"}},
	{"audit trail", []string{"sign batches of %d entries", "ship entries within %d seconds"}},
	{"rollout controller", []string{"shift %d percent of traffic per step", "wait %d minutes between steps"}},
	{"token service", []string{"issue tokens valid for %d minutes", "rotate signing keys every %d days"}},
	{"billing reconciler", []string{"compare %d invoices per batch", "flag differences above %d cents"}},
	{"thumbnail renderer", []string{"resize to %d pixels wide", "drop frames after %d milliseconds"}},
	{"notification fan-out", []string{"send %d messages per second per shard", "collapse duplicates within %d seconds"}},
}

// Generic office prose that pads documents the way real notes are padded.
var fillerSentences = []string{
	"We agreed to revisit this at the next planning session.",
	"Several people asked for more context before committing to a date.",
	"The team will share a short written update in the channel afterwards.",
	"Nobody objected, but two people want to see the numbers first.",
	"This depends on how much time the platform work takes this quarter.",
	"There was a long discussion about scope that did not reach a conclusion.",
	"We should keep the rollout small until we understand the failure modes.",
	"It is worth writing down what we tried so the next team does not repeat it.",
	"The plan is ambitious, and everyone agreed it needs a clear owner.",
	"Customer feedback so far has been positive but the sample is small.",
	"We will check in again once the first results are in.",
	"The budget for this has not been confirmed yet.",
	"A few open questions remain about ownership after launch.",
	"People liked the proposal but want a simpler first version.",
	"The estimates assume no surprises from the vendor.",
	"Documentation lags behind the code and needs a pass before launch.",
	"We spent most of the time on trade-offs rather than details.",
	"The next milestone is a demo for the wider team.",
}
