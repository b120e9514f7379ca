package synth

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Query categories.
const (
	CatName       = "name"       // a person's or a project's name
	CatFiller     = "filler"     // a natural question padded with filler words
	CatTypo       = "typo"       // a name or topic with one typo in its rarest word
	CatInflection = "inflection" // words inflected differently from the text
	CatTopic      = "topic"      // "<codename> <topic>"
	CatDetail     = "detail"     // a detail stated deep inside a long document
	CatIdentifier = "identifier" // a ticket, RFC or incident id
	CatRole       = "role"       // a person by role and team, or who leads a project
)

type query struct {
	id       string
	text     string
	category string
	split    string
	relevant map[string]int
}

// heldOutShare is the share of each category's queries held out.
const heldOutShare = 0.35

func (w *world) queries() []query {
	var all []query
	add := func(cat string, qs []query) {
		// Hold out a fixed share of every category, chosen at random.
		idx := w.rng.Perm(len(qs))
		hold := int(float64(len(qs))*heldOutShare + 0.5)
		for rank, i := range idx {
			qs[i].category = cat
			qs[i].split = "dev"
			if rank < hold {
				qs[i].split = "heldout"
			}
		}
		for i := range qs {
			qs[i].id = fmt.Sprintf("%s-%03d", cat, i+1)
		}
		all = append(all, qs...)
	}
	add(CatName, w.nameQueries())
	add(CatFiller, w.fillerQueries())
	add(CatTypo, w.typoQueries())
	add(CatInflection, w.inflectionQueries())
	add(CatTopic, w.topicQueries())
	add(CatDetail, w.detailQueries())
	add(CatIdentifier, w.identifierQueries())
	add(CatRole, w.roleQueries())
	return all
}

// Ground truth per intent.

func personLabels(p *person) map[string]int {
	m := map[string]int{p.key: 2}
	for _, d := range p.oneOnOnes {
		m[d.key] = 1
	}
	for _, pr := range p.leads {
		m[pr.key] = 1
	}
	return m
}

func projectLabels(pr *project) map[string]int {
	m := map[string]int{pr.key: 2, pr.decision.key: 1}
	if pr.design != nil {
		m[pr.design.doc.key] = 1
	}
	return m
}

func topicLabels(pr *project) map[string]int {
	m := map[string]int{pr.decision.key: 2, pr.key: 1}
	for _, d := range pr.meetings {
		m[d.key] = 1
	}
	for _, t := range pr.tasks {
		m[t.doc.key] = 1
	}
	if pr.design != nil {
		m[pr.design.doc.key] = 1
	}
	return m
}

func (w *world) samplePeople(n int) []*person {
	idx := w.rng.Perm(len(w.people))
	out := make([]*person, 0, n)
	for _, i := range idx[:min(n, len(idx))] {
		out = append(out, w.people[i])
	}
	return out
}

func (w *world) sampleProjects(n int) []*project {
	idx := w.rng.Perm(len(w.projects))
	out := make([]*project, 0, n)
	for _, i := range idx[:min(n, len(idx))] {
		out = append(out, w.projects[i])
	}
	return out
}

func (w *world) nameQueries() []query {
	var qs []query
	for i, p := range w.samplePeople(18) {
		text := p.full()
		if i%6 == 5 {
			text = strings.ToLower(text)
		}
		qs = append(qs, query{text: text, relevant: personLabels(p)})
	}
	for i, pr := range w.sampleProjects(12) {
		text := pr.code
		if i%3 == 1 {
			text = "Project " + pr.code
		}
		qs = append(qs, query{text: text, relevant: projectLabels(pr)})
	}
	return qs
}

func (w *world) fillerQueries() []query {
	var qs []query
	personT := []string{"what is it that %s does", "who is %s again", "tell me about %s please", "what do we know about %s"}
	for i, p := range w.samplePeople(8) {
		qs = append(qs, query{text: fmt.Sprintf(personT[i%len(personT)], p.full()), relevant: personLabels(p)})
	}
	statusT := []string{"where do we stand with %s these days", "what is going on with %s right now", "any news on the %s project lately"}
	for i, pr := range w.sampleProjects(7) {
		m := projectLabels(pr)
		m[pr.meetings[len(pr.meetings)-1].key] = 1
		qs = append(qs, query{text: fmt.Sprintf(statusT[i%len(statusT)], pr.code), relevant: m})
	}
	for i, pr := range w.sampleProjects(9) {
		var text string
		switch i % 3 {
		case 0:
			text = fmt.Sprintf("remind me about the %s decision for %s again", pr.topic.short, pr.code)
		case 1:
			text = fmt.Sprintf("what did we end up deciding about the %s in %s", pr.topic.phrase, pr.code)
		default:
			text = fmt.Sprintf("can you find what was agreed on %s for %s", pr.topic.short, pr.code)
		}
		qs = append(qs, query{text: text, relevant: topicLabels(pr)})
	}
	for i, pr := range w.sampleProjects(6) {
		m := map[string]int{}
		for j, d := range pr.meetings {
			m[d.key] = 1
			if j == len(pr.meetings)-1 {
				m[d.key] = 2
			}
		}
		text := fmt.Sprintf("I need the notes from the last %s meeting please", pr.code)
		if i%2 == 1 {
			text = fmt.Sprintf("could you pull up what was said at the latest %s sync", pr.code)
		}
		qs = append(qs, query{text: text, relevant: m})
	}
	return qs
}

// typo changes one letter of word: two neighbours swapped or one dropped,
// never the first letter.
func (w *world) typo(word string) string {
	r := []rune(word)
	for {
		if w.rng.IntN(2) == 0 {
			i := 1 + w.rng.IntN(len(r)-2)
			if r[i] == r[i+1] {
				continue
			}
			r[i], r[i+1] = r[i+1], r[i]
			return string(r)
		}
		i := 1 + w.rng.IntN(len(r)-1)
		return string(append(r[:i:i], r[i+1:]...))
	}
}

func (w *world) typoQueries() []query {
	var qs []query
	for i, p := range w.samplePeople(10) {
		text := p.first + " " + w.typo(p.last)
		if i%4 == 3 {
			text = w.typo(p.last)
		}
		qs = append(qs, query{text: text, relevant: personLabels(p)})
	}
	for _, pr := range w.sampleProjects(8) {
		qs = append(qs, query{text: w.typo(pr.code), relevant: projectLabels(pr)})
	}
	for _, pr := range w.sampleProjects(7) {
		qs = append(qs, query{text: w.typo(pr.code) + " " + pr.topic.phrase, relevant: topicLabels(pr)})
	}
	return qs
}

// Inflection of the task vocabulary (every word there is regular).
func pastTense(v string) string {
	if strings.HasSuffix(v, "e") {
		return v + "d"
	}
	return v + "ed"
}

func gerund(v string) string {
	if strings.HasSuffix(v, "e") {
		return v[:len(v)-1] + "ing"
	}
	return v + "ing"
}

func plural(n string) string {
	switch {
	case strings.HasSuffix(n, "y") && !strings.ContainsAny(n[len(n)-2:len(n)-1], "aeiou"):
		return n[:len(n)-1] + "ies"
	case strings.HasSuffix(n, "s"), strings.HasSuffix(n, "x"), strings.HasSuffix(n, "ch"), strings.HasSuffix(n, "sh"):
		return n + "es"
	}
	return n + "s"
}

func (w *world) inflectionQueries() []query {
	var tasks []*task
	for _, pr := range w.projects {
		tasks = append(tasks, pr.tasks...)
	}
	idx := w.rng.Perm(len(tasks))
	var qs []query
	for i, j := range idx[:25] {
		t := tasks[j]
		var text string
		switch i % 3 {
		case 0:
			text = fmt.Sprintf("%s %s %s", pastTense(t.verb), t.qualifier, plural(t.noun))
		case 1:
			text = fmt.Sprintf("%s the %s %s", gerund(t.verb), t.qualifier, plural(t.noun))
		default:
			text = fmt.Sprintf("%s %s %s", t.qualifier, plural(t.noun), pastTense(t.verb))
		}
		m := map[string]int{t.doc.key: 2}
		if t.meeting != nil {
			m[t.meeting.key] = 1
		}
		qs = append(qs, query{text: text, relevant: m})
	}
	return qs
}

func (w *world) topicQueries() []query {
	var qs []query
	for i, pr := range w.sampleProjects(24) {
		text := pr.code + " " + pr.topic.phrase
		if i%3 == 2 {
			text = pr.code + " " + pr.topic.short
		}
		qs = append(qs, query{text: text, relevant: topicLabels(pr)})
	}
	return qs
}

func (w *world) detailQueries() []query {
	var qs []query
	for _, d := range w.designs {
		// Facts of the last component sections: deep in the document.
		deep := d.facts[len(d.facts)-6:]
		for _, k := range w.rng.Perm(len(deep))[:2] {
			f := deep[k]
			qs = append(qs, query{text: f.component + " " + f.text, relevant: map[string]int{d.doc.key: 2}})
		}
	}
	return qs
}

func (w *world) identifierQueries() []query {
	var qs []query
	ids := slices.Sorted(maps.Keys(w.tickets))
	for i, k := range w.rng.Perm(len(ids))[:16] {
		t := w.tickets[ids[k]]
		m := map[string]int{t.doc.key: 2}
		for _, pr := range w.projects {
			for _, mt := range pr.meetings {
				if strings.Contains(mt.content, t.ticket+":") {
					m[mt.key] = 1
				}
			}
		}
		text := t.ticket
		if i%4 == 3 {
			text = strings.ToLower(text)
		}
		qs = append(qs, query{text: text, relevant: m})
	}
	for _, k := range w.rng.Perm(len(w.designs))[:5] {
		d := w.designs[k]
		qs = append(qs, query{text: d.rfc, relevant: map[string]int{d.doc.key: 2}})
	}
	for _, k := range w.rng.Perm(len(w.postmortems))[:5] {
		pm := w.postmortems[k]
		m := map[string]int{pm.doc.key: 2}
		for _, d := range pm.mentions {
			m[d.key] = 1
		}
		qs = append(qs, query{text: pm.id, relevant: m})
	}
	return qs
}

func (w *world) roleQueries() []query {
	var qs []query
	for i, pr := range w.sampleProjects(8) {
		text := "who leads " + pr.code
		if i%2 == 1 {
			text = pr.code + " lead"
		}
		qs = append(qs, query{text: text, relevant: map[string]int{pr.lead.key: 2, pr.key: 1}})
	}
	// Role and team pairs held by exactly one person.
	type rt struct{ role, team string }
	count := map[rt][]*person{}
	var order []rt
	for _, p := range w.people {
		k := rt{p.role.title, p.team}
		if count[k] == nil {
			order = append(order, k)
		}
		count[k] = append(count[k], p)
	}
	n := 0
	for _, i := range w.rng.Perm(len(order)) {
		k := order[i]
		if len(count[k]) != 1 || n == 12 {
			continue
		}
		text := fmt.Sprintf("%s on the %s team", k.role, k.team)
		if n%3 == 1 {
			text = fmt.Sprintf("%s %s", k.team, k.role)
		}
		qs = append(qs, query{text: text, relevant: map[string]int{count[k][0].key: 2}})
		n++
	}
	return qs
}
