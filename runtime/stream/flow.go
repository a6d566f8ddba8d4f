package stream

// Flow control of a task's waiting inputs. The poll budget (unit.pollBudget)
// bounds a unit's inputs only together, and franz-go hands over whichever
// partitions it fetched, so one input of a task of several keeps being
// handed records while the task processes another: the side of a join
// whose records lie ahead in time takes in its whole backlog, packed
// (packed.go) at some 50 bytes a small record, as long as the other side
// has records to process. A backlog of ten million records would hold
// half a gigabyte (TestWaitingInputIsPausedNotBuffered: 40,000 records
// packed to 2.2 MB).
//
// So an input that holds more than pauseAbovePacked bytes packed is paused
// (franz-go's PauseFetchPartitions), as Kafka Streams pauses a partition
// past buffered.records.per.partition, and resumed once it holds less than
// resumeBelowPacked. Pausing everything past the share was tried and cost a
// fifth more CPU per record: franz-go drops a paused partition's buffered
// data and fetches it again. Past a megabyte it is rare: in the
// stream-stream join benchmark, whose right partitions come whole in one
// fetch (about 1.1 MB packed each), it made no difference beyond noise
// (peak RSS 160-195 MiB with it, 149-184 without, alternated).
//
// A partition is paused only while another input of the unit has records
// left to fetch, and resumed as soon as none has: franz-go sends a resumed
// partition's fetch only once the one in flight returns, and a fetch of
// partitions that are all caught up waits up to the fetch max wait (500
// ms) for data. With records left elsewhere it returns at once.

const (
	pauseAbovePacked  = 1 << 20
	resumeBelowPacked = 256 << 10
)

type topicPartition struct {
	topic     string
	partition int32
}

// flowControl pauses and resumes the unit's inputs as above; paused
// partitions whose task went are resumed too (franz-go keeps a partition
// paused across assignments).
func (u *unit) flowControl() {
	// Whether another input has records left to fetch: asked only when
	// something is paused or about to be, as most steps have nothing to
	// decide.
	known, more := false, false
	moreToFetch := func() bool {
		if !known {
			known, more = true, u.moreToFetch()
		}
		return more
	}
	var pause, resume map[string][]int32
	for tp := range u.paused {
		in := u.tm.inputs[tp.topic][tp.partition]
		if in == nil || in.packedBytes() < resumeBelowPacked || !moreToFetch() {
			if resume == nil {
				resume = map[string][]int32{}
			}
			resume[tp.topic] = append(resume[tp.topic], tp.partition)
			delete(u.paused, tp)
		}
	}
	for _, t := range u.tm.order {
		if len(t.inputs) < 2 {
			continue // a task of one input never packs
		}
		for _, in := range t.inputs {
			b := in.packedBytes()
			u.packedPeak = max(u.packedPeak, b)
			if b <= pauseAbovePacked {
				continue
			}
			tp := topicPartition{in.topic(), in.state().partition}
			if _, ok := u.paused[tp]; ok || !moreToFetch() {
				continue
			}
			if u.paused == nil {
				u.paused = map[topicPartition]struct{}{}
			}
			u.paused[tp] = struct{}{}
			if pause == nil {
				pause = map[string][]int32{}
			}
			pause[tp.topic] = append(pause[tp.topic], tp.partition)
			u.pauses++
		}
	}
	if pause != nil {
		u.cl.PauseFetchPartitions(pause)
	}
	if resume != nil {
		u.cl.ResumeFetchPartitions(resume)
	}
}

// moreToFetch says some input of the unit that is not paused has records
// left to fetch (or has not been fetched yet).
func (u *unit) moreToFetch() bool {
	for _, t := range u.tm.order {
		for _, in := range t.inputs {
			st := in.state()
			if st.end >= 0 && st.fetchedTo >= st.end {
				continue
			}
			if _, ok := u.paused[topicPartition{in.topic(), st.partition}]; !ok {
				return true
			}
		}
	}
	return false
}
