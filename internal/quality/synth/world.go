// Package synth generates the labelled development set of the search
// quality benchmark: a realistic organisation (people, projects with
// codenames, decision records, meeting notes, tasks and tickets, long
// design documents, postmortems, memories, how-to notes) and queries in
// several categories whose graded labels come from the generator's own
// ground truth (who leads what, which decision belongs to which project,
// which chunk of which document states a detail). Generation is
// deterministic for a seed; the committed file is Generate(DefaultSeed).
package synth

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// DefaultSeed generates the committed set.
const DefaultSeed = 20261202

// doc is one generated entity.
type doc struct {
	key        string
	typ        string
	content    string
	tags       []string
	visibility string
	status     string
	metadata   map[string]any
}

type person struct {
	key        string
	first      string
	last       string
	nick       string
	role       role
	team       string
	city       string
	hobby      string
	year       int
	style      int // how the note about the person is written
	leads      []*project
	oneOnOnes  []*doc
	mentionsIn []*doc
}

func (p *person) full() string { return p.first + " " + p.last }

type project struct {
	key      string
	code     string
	topic    *topic
	lead     *person
	members  []*person
	quarter  string
	doc      *doc
	decision *doc
	meetings []*doc
	tasks    []*task
	design   *design
}

type task struct {
	doc       *doc
	verb      string
	qualifier string
	noun      string
	ticket    string
	owner     *person
	meeting   *doc // the meeting where it was assigned, if any
}

type design struct {
	doc   *doc
	rfc   string
	facts []fact
}

// fact is a detail stated in one section of a design document.
type fact struct {
	component string
	text      string // "batch 750 events per write"
	number    int
}

type postmortem struct {
	doc      *doc
	id       string
	project  *project
	mentions []*doc
}

type world struct {
	rng         *rand.Rand
	people      []*person
	projects    []*project
	docs        []*doc
	designs     []*design
	postmortems []*postmortem
	tickets     map[string]*task
	usedIDs     map[string]bool
	date        int // a running day counter for dates
}

func newWorld(seed uint64) *world {
	w := &world{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), tickets: map[string]*task{}, usedIDs: map[string]bool{}}
	w.makePeople()
	w.makeProjects()
	w.makeTasks()
	w.makeMeetings()
	w.makeDecisions()
	w.makeDesigns()
	w.makePostmortems()
	w.makeOneOnOnes()
	w.makeMemories()
	w.makeNotes()
	w.finishPeople()
	return w
}

func (w *world) pick(xs []string) string { return xs[w.rng.IntN(len(xs))] }

func (w *world) add(d *doc) *doc {
	if d.visibility == "" {
		d.visibility = "work"
	}
	if d.status == "" {
		d.status = "active"
	}
	w.docs = append(w.docs, d)
	return d
}

// nextDate returns a date string, advancing a few days each call.
func (w *world) nextDate() string {
	w.date += 1 + w.rng.IntN(4)
	day := w.date % 336
	return fmt.Sprintf("2026-%02d-%02d", day/28+1, day%28+1)
}

// ident returns a fresh ticket-like identifier with the prefix.
func (w *world) ident(prefix string, lo, hi int) string {
	for {
		id := fmt.Sprintf("%s-%d", prefix, lo+w.rng.IntN(hi-lo))
		if !w.usedIDs[id] {
			w.usedIDs[id] = true
			return id
		}
	}
}

func (w *world) makePeople() {
	lasts := slices.Clone(lastNames)
	w.rng.Shuffle(len(lasts), func(i, j int) { lasts[i], lasts[j] = lasts[j], lasts[i] })
	for i, last := range lasts {
		first := firstNames[w.rng.IntN(len(firstNames))]
		p := &person{
			key:   "person/" + strings.ToLower(first+"-"+last),
			first: first, last: last,
			role:  roles[w.rng.IntN(len(roles))],
			team:  w.pick(teams),
			city:  w.pick(cities),
			hobby: w.pick(hobbies),
			year:  2015 + w.rng.IntN(11),
			style: i % 10,
		}
		if n, ok := nicknames[first]; ok && w.rng.IntN(2) == 0 {
			p.nick = n
		}
		w.people = append(w.people, p)
	}
}

func (w *world) makeProjects() {
	codes := slices.Clone(codenames)
	w.rng.Shuffle(len(codes), func(i, j int) { codes[i], codes[j] = codes[j], codes[i] })
	leads := slices.Clone(w.people)
	w.rng.Shuffle(len(leads), func(i, j int) { leads[i], leads[j] = leads[j], leads[i] })
	for i, code := range codes {
		t := &topics[i%len(topics)]
		pr := &project{key: "project/" + strings.ToLower(code), code: code, topic: t, lead: leads[i],
			quarter: fmt.Sprintf("Q%d", 1+w.rng.IntN(4))}
		pr.lead.leads = append(pr.lead.leads, pr)
		for len(pr.members) < 3+w.rng.IntN(3) {
			m := w.people[w.rng.IntN(len(w.people))]
			if m != pr.lead && !slices.Contains(pr.members, m) {
				pr.members = append(pr.members, m)
			}
		}
		w.projects = append(w.projects, pr)
	}
	for i, pr := range w.projects {
		names := make([]string, len(pr.members))
		for j, m := range pr.members {
			names[j] = m.full()
		}
		var b strings.Builder
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "Project %s is the %s team's work on the %s. %s leads it, with %s.",
				pr.code, pr.topic.team, pr.topic.phrase, pr.lead.full(), joinAnd(names))
		case 1:
			fmt.Fprintf(&b, "%s — %s for the %s team.\n\nLead: %s. Team: %s.",
				pr.code, pr.topic.phrase, pr.topic.team, pr.lead.full(), strings.Join(names, ", "))
		default:
			fmt.Fprintf(&b, "# %s\n\nThe %s effort of the %s team, led by %s. Working on it: %s.",
				pr.code, pr.topic.phrase, pr.topic.team, pr.lead.full(), joinAnd(names))
		}
		fmt.Fprintf(&b, " The goal for %s is to %s, and success is measured by %s. "+
			"The main risk is %s. %s",
			pr.quarter, goalOf(pr.topic), pr.topic.metric, pr.topic.risk, w.filler(2))
		pr.doc = w.add(&doc{key: pr.key, typ: "project", content: b.String(),
			tags:     []string{"project", pr.topic.team},
			metadata: map[string]any{"codename": pr.code, "lead": pr.lead.full(), "quarter": pr.quarter}})
	}
}

// goalOf turns a topic's decision into a goal.
func goalOf(t *topic) string {
	return "settle how we " + strings.TrimPrefix(t.decision, "we will ")
}

func (w *world) makeTasks() {
	type pair struct{ q, n string }
	used := map[pair]bool{}
	for _, pr := range w.projects {
		for k := 0; k < 6; k++ {
			var t task
			for {
				t = task{verb: w.pick(taskVerbs), qualifier: w.pick(taskQualifiers), noun: w.pick(taskNouns)}
				if !used[pair{t.qualifier, t.noun}] {
					used[pair{t.qualifier, t.noun}] = true
					break
				}
			}
			t.owner = pr.members[w.rng.IntN(len(pr.members))]
			var b strings.Builder
			phrase := fmt.Sprintf("%s the %s %s", t.verb, t.qualifier, t.noun)
			if k%2 == 0 {
				t.ticket = w.ident(pr.topic.prefix, 100, 9999)
				fmt.Fprintf(&b, "%s: %s for %s.", t.ticket, capitalize(phrase), pr.code)
			} else {
				fmt.Fprintf(&b, "%s for %s.", capitalize(phrase), pr.code)
			}
			fmt.Fprintf(&b, " Owner: %s. Needed before the %s work moves on; see the %s notes.",
				t.owner.full(), pr.topic.short, pr.code)
			status := []string{"next", "inbox", "waiting", "scheduled", "done", "someday"}[w.rng.IntN(6)]
			md := map[string]any{"context": "@work", "project": pr.code}
			if t.ticket != "" {
				md["ticket"] = t.ticket
			}
			t.doc = w.add(&doc{key: fmt.Sprintf("task/%s-%d", strings.ToLower(pr.code), k+1), typ: "task",
				content: b.String(), tags: []string{strings.ToLower(pr.code)}, status: status, metadata: md})
			tk := t
			pr.tasks = append(pr.tasks, &tk)
			if t.ticket != "" {
				w.tickets[t.ticket] = &tk
			}
		}
	}
}

func (w *world) makeMeetings() {
	for _, pr := range w.projects {
		for k := 0; k < 4; k++ {
			date := w.nextDate()
			attendees := append([]*person{pr.lead}, pr.members...)
			names := make([]string, len(attendees))
			for j, a := range attendees {
				names[j] = a.full()
			}
			var b strings.Builder
			switch k % 3 {
			case 0:
				fmt.Fprintf(&b, "%s weekly sync — %s\nAttendees: %s\n\n", pr.code, date, strings.Join(names, ", "))
			case 1:
				fmt.Fprintf(&b, "Notes from the %s check-in on %s with %s.\n\n", pr.code, date, joinAnd(names))
			default:
				fmt.Fprintf(&b, "Meeting: %s planning (%s)\nPresent: %s\n\n", pr.code, date, strings.Join(names, ", "))
			}
			t := pr.topic
			a, c := attendees[w.rng.IntN(len(attendees))], attendees[w.rng.IntN(len(attendees))]
			fmt.Fprintf(&b, "- %s gave an update on the %s: the %s and the %s are the open items.\n",
				a.first, t.phrase, t.terms[w.rng.IntN(len(t.terms))], t.terms[w.rng.IntN(len(t.terms))])
			fmt.Fprintf(&b, "- %s raised the risk of %s. %s\n", c.first, t.risk, w.filler(1))
			fmt.Fprintf(&b, "- We compared %s with %s. %s\n", t.options[0], t.options[1], w.filler(1))
			md := map[string]any{"project": pr.code, "date": date}
			d := &doc{key: fmt.Sprintf("meeting/%s-%d", strings.ToLower(pr.code), k+1), typ: "interaction",
				tags: []string{"meeting", strings.ToLower(pr.code)}, metadata: md}
			// Tickets discussed, and action items that create tasks.
			var refs []string
			for j, tk := range pr.tasks {
				if j%4 == k && tk.ticket != "" {
					fmt.Fprintf(&b, "- Status of %s: %s. %s\n", tk.ticket, w.pick([]string{"blocked on review", "in progress", "done, pending verification", "waiting on the vendor"}), w.filler(1))
					refs = append(refs, tk.ticket)
				}
			}
			b.WriteString("\nAction items:\n")
			for j, tk := range pr.tasks {
				if j%4 == k {
					fmt.Fprintf(&b, "- %s to %s the %s %s\n", tk.owner.first, tk.verb, tk.qualifier, tk.noun)
					tk.meeting = d
				}
			}
			fmt.Fprintf(&b, "- %s to send a summary to the %s channel\n", a.first, t.team)
			d.content = b.String()
			if len(refs) > 0 {
				md["tickets"] = refs
			}
			w.add(d)
			pr.meetings = append(pr.meetings, d)
			for _, at := range attendees {
				at.mentionsIn = append(at.mentionsIn, d)
			}
		}
	}
}

func (w *world) makeDecisions() {
	for i, pr := range w.projects {
		t := pr.topic
		date := w.nextDate()
		var b strings.Builder
		md := map[string]any{"project": pr.code, "decided_on": date, "status": "accepted"}
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "Decision record: %s %s\n\n", pr.code, t.phrase)
			md["title"] = fmt.Sprintf("%s: %s decision", pr.code, t.phrase)
		case 1:
			fmt.Fprintf(&b, "ADR-%d — %s for %s\n\n", 10+i, capitalize(t.phrase), pr.code)
		default:
			fmt.Fprintf(&b, "After three rounds of review the %s group settled the %s question.\n\n", pr.code, t.short)
		}
		fmt.Fprintf(&b, "Context: the %s has grown without a clear owner. %s keep coming up in support tickets, "+
			"and %s asked for a single approach. %s\n\n", t.phrase, capitalize(t.terms[0]), pr.lead.full(), w.filler(2))
		fmt.Fprintf(&b, "Options considered: (1) %s; (2) %s; (3) %s.\n\n", t.options[0], t.options[1], t.decision)
		fmt.Fprintf(&b, "Decision: we will %s.\n\n", t.decision)
		fmt.Fprintf(&b, "Consequences: the biggest risk is %s, so we will watch %s every week. "+
			"The %s and %s need updating. %s\n\n", t.risk, t.metric, t.terms[1], t.terms[2], w.filler(2))
		fmt.Fprintf(&b, "Decided on %s by %s with %s.", date, pr.lead.full(), pr.members[0].full())
		pr.decision = w.add(&doc{key: "decision/" + strings.ToLower(pr.code), typ: "document", content: b.String(),
			tags: []string{"decision", strings.ToLower(pr.code)}, metadata: md})
	}
}

func (w *world) makeDesigns() {
	for i, pr := range w.projects {
		if i%2 == 1 {
			continue
		}
		rfc := fmt.Sprintf("RFC-%d", 11+i)
		d := &design{rfc: rfc}
		t := pr.topic
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %s %s design\n\nAuthor: %s. Reviewers: %s.\n\n", rfc, pr.code, t.phrase, pr.lead.full(), pr.members[0].full())
		fmt.Fprintf(&b, "## Background\n\nThe %s today is spread over several services. %s %s %s\n\n", t.phrase, w.filler(3), capitalize(t.terms[0]), w.filler(2))
		fmt.Fprintf(&b, "## Goals\n\nWe want to %s. Success is measured by %s. Non-goals: rewriting the %s. %s\n\n", t.decision, t.metric, t.terms[3], w.filler(3))
		comps := slices.Clone(components)
		w.rng.Shuffle(len(comps), func(a, c int) { comps[a], comps[c] = comps[c], comps[a] })
		for _, c := range comps[:7] {
			fmt.Fprintf(&b, "## %s\n\n", capitalize(c.name))
			for _, f := range c.facts {
				n := 15 + w.rng.IntN(980)
				text := fmt.Sprintf(f, n)
				d.facts = append(d.facts, fact{component: c.name, text: text, number: n})
				if w.rng.IntN(2) == 0 {
					fmt.Fprintf(&b, "The %s %s. ", c.name, text)
				} else {
					fmt.Fprintf(&b, "In %s the %s will %s. ", pr.code, c.name, text)
				}
				b.WriteString(w.filler(3))
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s\n\n", w.filler(4))
		}
		fmt.Fprintf(&b, "## Rollout\n\nWe roll out behind feature flags, one region at a time. %s\n\n", w.filler(4))
		fmt.Fprintf(&b, "## Risks\n\nThe main risk is %s. %s\n\n", t.risk, w.filler(3))
		fmt.Fprintf(&b, "## Open questions\n\n%s %s", w.filler(3), w.filler(2))
		d.doc = w.add(&doc{key: "design/" + strings.ToLower(rfc), typ: "document", content: b.String(),
			tags: []string{"design", "rfc", strings.ToLower(pr.code)}, metadata: map[string]any{"rfc": rfc, "project": pr.code}})
		pr.design = d
		w.designs = append(w.designs, d)
	}
}

func (w *world) makePostmortems() {
	for i := 0; i < 10; i++ {
		pr := w.projects[(i*5+3)%len(w.projects)]
		id := w.ident("INC", 1000, 9999)
		date := w.nextDate()
		c := components[w.rng.IntN(len(components))]
		var b strings.Builder
		fmt.Fprintf(&b, "%s postmortem: %s degraded for %s customers on %s\n\n", id, c.name, pr.code, date)
		fmt.Fprintf(&b, "Summary: the %s stopped keeping up for %d minutes. %s\n\n", c.name, 12+w.rng.IntN(90), w.filler(2))
		fmt.Fprintf(&b, "Timeline: the first alert fired at 09:%02d; %s acknowledged the page and rolled back. %s\n\n", w.rng.IntN(60), pr.lead.full(), w.filler(2))
		fmt.Fprintf(&b, "Root cause: a configuration change to the %s that was not covered by the %s. %s\n\n", c.name, pr.topic.terms[w.rng.IntN(len(pr.topic.terms))], w.filler(1))
		fmt.Fprintf(&b, "Follow-ups: add an alert on the %s, update the runbook, and review the change process. %s", c.name, w.filler(1))
		pm := &postmortem{id: id, project: pr}
		pm.doc = w.add(&doc{key: "postmortem/" + strings.ToLower(id), typ: "document", content: b.String(),
			tags: []string{"postmortem", "incident"}, metadata: map[string]any{"incident": id, "project": pr.code}})
		// The incident comes up in a later meeting of the project.
		m := pr.meetings[len(pr.meetings)-1]
		m.content += fmt.Sprintf("- Follow-ups from %s are tracked by %s.\n", id, pr.lead.first)
		pm.mentions = append(pm.mentions, m)
		w.postmortems = append(w.postmortems, pm)
	}
}

func (w *world) makeOneOnOnes() {
	for i := 0; i < 20; i++ {
		p := w.people[(i*7+2)%len(w.people)]
		mgr := w.people[(i*11+5)%len(w.people)]
		if mgr == p {
			mgr = w.people[(i*11+6)%len(w.people)]
		}
		date := w.nextDate()
		var b strings.Builder
		fmt.Fprintf(&b, "1:1 with %s — %s\n\n", p.full(), date)
		fmt.Fprintf(&b, "%s and %s talked about career growth and the next six months. %s wants more time for %s. ", mgr.first, p.first, p.first, p.role.focus)
		if len(p.leads) > 0 {
			fmt.Fprintf(&b, "The %s timeline came up again. ", p.leads[0].code)
		}
		fmt.Fprintf(&b, "%s\n\nNext 1:1 in two weeks.", w.filler(2))
		d := w.add(&doc{key: fmt.Sprintf("oneonone/%s-%d", strings.ToLower(p.last), i+1), typ: "interaction", content: b.String(),
			tags: []string{"1:1"}, visibility: "personal", metadata: map[string]any{"with": p.full(), "date": date}})
		p.oneOnOnes = append(p.oneOnOnes, d)
	}
}

func (w *world) makeMemories() {
	for i := 0; i < 70; i++ {
		p := w.people[w.rng.IntN(len(w.people))]
		pr := w.projects[w.rng.IntN(len(w.projects))]
		q := w.people[w.rng.IntN(len(w.people))]
		var s string
		switch i % 7 {
		case 0:
			s = fmt.Sprintf("%s prefers written status updates over meetings; send the %s summary by %s.", p.full(), pr.code, w.pick(weekdays))
		case 1:
			s = fmt.Sprintf("Remember: %s demos happen on %ss and %s runs them.", pr.code, w.pick(weekdays), p.first)
		case 2:
			s = fmt.Sprintf("%s is out until the %dth of %s; route %s questions to %s.", p.full(), 3+w.rng.IntN(25), w.pick(months), pr.code, q.full())
		case 3:
			s = fmt.Sprintf("The staging environment for %s is reset every %s night, so do not keep test data there.", pr.code, w.pick(weekdays))
		case 4:
			s = fmt.Sprintf("%s asked to be looped in on anything touching the %s.", p.full(), pr.topic.phrase)
		case 5:
			s = fmt.Sprintf("When %s reviews a proposal, lead with the numbers; %s cares most about %s.", p.first, p.first, pr.topic.metric)
		default:
			s = fmt.Sprintf("%s and %s pair on %s work on %s afternoons.", p.first, q.first, pr.code, w.pick(weekdays))
		}
		vis := "work"
		if i%5 == 0 {
			vis = "personal"
		}
		d := w.add(&doc{key: fmt.Sprintf("memory/%03d", i+1), typ: "memory", content: s, visibility: vis,
			tags: []string{w.pick([]string{"preference", "reminder", "people", "process"})}})
		p.mentionsIn = append(p.mentionsIn, d)
	}
}

func (w *world) makeNotes() {
	kinds := []string{"How to", "Retro", "Onboarding guide", "Policy", "Weekly update"}
	for i := 0; i < 80; i++ {
		pr := w.projects[w.rng.IntN(len(w.projects))]
		p := w.people[w.rng.IntN(len(w.people))]
		t := pr.topic
		kind := kinds[i%len(kinds)]
		var b strings.Builder
		switch kind {
		case "How to":
			fmt.Fprintf(&b, "How to request access to the %s tooling\n\n1. Ask %s for an invite. 2. Read the %s runbook. 3. Pair with someone from the %s team for a day. %s",
				t.short, p.full(), t.team, t.team, w.filler(4))
		case "Retro":
			fmt.Fprintf(&b, "Retro: %s %s\n\nWhat went well: the %s and the %s. What did not: %s %s Actions: %s will follow up.",
				pr.topic.team, pr.quarter, t.terms[0], t.terms[1], w.filler(3), capitalize(t.risk)+".", p.full())
		case "Onboarding guide":
			fmt.Fprintf(&b, "Onboarding guide for the %s team\n\nYour first week: meet %s, read the decision records, and set up the %s. %s %s",
				t.team, p.full(), t.terms[2], w.filler(4), w.filler(3))
		case "Policy":
			fmt.Fprintf(&b, "Policy note: %s\n\nEvery team follows the same rules for the %s. Questions go to %s. %s %s",
				t.phrase, t.terms[0], p.full(), w.filler(3), w.filler(3))
		default:
			fmt.Fprintf(&b, "Weekly update from the %s team\n\nThis week: progress on the %s, hiring, and the %s. %s mentioned %s. %s",
				t.team, t.phrase, t.terms[1], p.first, t.terms[3], w.filler(4))
		}
		d := w.add(&doc{key: fmt.Sprintf("note/%03d", i+1), typ: "document", content: b.String(),
			tags: []string{strings.ToLower(strings.ReplaceAll(kind, " ", "-")), t.team}})
		p.mentionsIn = append(p.mentionsIn, d)
	}
}

// finishPeople writes the note about each person, now that what they lead
// is known. Most notes start with the name (a person's de-facto title);
// some start with a heading, and a few carry the name only in metadata.
func (w *world) finishPeople() {
	for _, p := range w.people {
		var b strings.Builder
		desc := fmt.Sprintf("%s on the %s team, based in %s", withArticle(p.role.title), p.team, p.city)
		switch {
		case p.style < 7:
			fmt.Fprintf(&b, "%s is %s.", p.full(), desc)
		case p.style < 9:
			fmt.Fprintf(&b, "# %s\n\n%s.", p.full(), capitalize(desc))
		default:
			fmt.Fprintf(&b, "%s.", capitalize(desc))
		}
		fmt.Fprintf(&b, " Joined in %d and spends most of the week on %s.", p.year, p.role.focus)
		for _, pr := range p.leads {
			fmt.Fprintf(&b, " Leads %s (%s).", pr.code, pr.topic.phrase)
		}
		if p.nick != "" {
			fmt.Fprintf(&b, " Goes by %s.", p.nick)
		}
		fmt.Fprintf(&b, " Outside work: %s. Best reached in the %s channel.", p.hobby, p.team)
		md := map[string]any{"name": p.full(), "team": p.team, "role": p.role.title,
			"email": strings.ToLower(p.first+"."+p.last) + "@example.com"}
		if p.nick != "" {
			md["aliases"] = []any{p.nick}
		}
		w.add(&doc{key: p.key, typ: "person", content: b.String(), tags: []string{p.team}, metadata: md})
	}
}

// filler returns n sentences of generic prose.
func (w *world) filler(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = w.pick(fillerSentences)
	}
	return strings.Join(parts, " ")
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func withArticle(s string) string {
	if strings.ContainsAny(s[:1], "aeiouAEIOU") {
		return "an " + s
	}
	return "a " + s
}
