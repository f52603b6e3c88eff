package main

// mutants are plausible one- or two-line bugs in the state machines, each
// a defect the concurrency suite must catch, every time.
var mutants = []mutant{
	{
		name: "rearm-publish-early", file: "timer.go",
		old: "if !t.w.CompareAndSwap(w, pack(when, stateOwned)) {\n\t\t\t\tcontinue",
		new: "if !t.w.CompareAndSwap(w, pack(when, stateQueued)) {\n\t\t\t\tcontinue",
		why: "a re-arm publishes the timer queued before its push succeeded",
	},
	{
		name: "stop-stack-open", file: "systemtimer.go",
		old: "sh.incoming.Swap(closedStack)",
		new: "sh.incoming.Swap(nil)",
		why: "SystemTimer.Stop leaves a shard's incoming stack open, not closed",
	},
	{
		name: "next-window-lost", file: "schedule.go",
		old: "if p.stopReq || p.resetReq || sh.closed {\n\t\t\t\tcontinue // Stop or Reset got there meanwhile",
		new: "if false {\n\t\t\t\tcontinue // Stop or Reset got there meanwhile",
		why: "a Stop or Reset made while rearm is in Scheduler.Next is lost",
	},
	{
		name: "ticker-same-gen", file: "chantimer.go",
		old: "\t\tgen := s>>chanGenShift + 1\n\t\tct.release(gen, ct.deliver(now))",
		new: "\t\tgen := s >> chanGenShift\n\t\tct.release(gen, ct.deliver(now))",
		why: "a channel timer's run releases its state word with the same generation (ABA)",
	},
	{
		name: "unlink-after-leave", file: "timer.go",
		old: "\tt.unlink()\n\tfailpoint(\"stopPending:unlinked\")\n\tsh.leavePending(t, 0, stateStopped)",
		new: "\tsh.leavePending(t, 0, stateStopped)\n\tfailpoint(\"stopPending:unlinked\")\n\tt.unlink()",
		why: "Stop unlinks a pending timer after its state leaves pending",
	},
	{
		name: "unstack-no-drain", file: "timer.go",
		old: "\tt.w.CompareAndSwap(pack(0, stateOwned), pack(0, stateQueuedStopped))\n\tsh.st.drainShard(sh, sh.st.now())",
		new: "\tt.w.CompareAndSwap(pack(0, stateOwned), pack(0, stateQueuedStopped))",
		why: "a Stop leaves a stopped timer below the top of the incoming stack",
	},
	{
		name: "take-skips-owned", file: "systemtimer.go",
		old: "\t\tcase stateOwned:\n\t\t\twaitOwned() // its pusher makes it queued",
		new: "\t\tcase stateOwned:\n\t\t\treturn false // its pusher makes it queued",
		why: "SystemTimer.Stop passes over a timer its pusher still owns: lost",
	},
	{
		name: "stop-fired-true", file: "timer.go",
		old: "\t\tcase stateOwned:\n\t\t\twaitOwned()\n\t\tdefault:\n\t\t\treturn false\n\t\t}\n\t}\n}\n\n// waitOwned",
		new: "\t\tcase stateOwned:\n\t\t\twaitOwned()\n\t\tcase stateFired:\n\t\t\treturn true\n\t\tdefault:\n\t\t\treturn false\n\t\t}\n\t}\n}\n\n// waitOwned",
		why: "Stop of a timer already handed to the executor reports that it stopped it",
	},
	{
		name: "stop-no-wait-driver", file: "systemtimer.go",
		old: "\tst.dq.Close()\n\t<-st.driverDone",
		new: "\tst.dq.Close()",
		why: "SystemTimer.Stop does not wait for the driver to finish its batch",
	},
	{
		name: "drain-runs-stopped", file: "timingwheel.go",
		old: "\t\t\tif s == stateQueuedStopped {",
		new: "\t\t\tif s == stateQueuedStopped && false {",
		why: "the drainer does not settle a timer stopped on the stack: it is left there",
	},
	{
		name: "push-ignores-closed", file: "systemtimer.go",
		old: "\t\tif h == closedStack {\n\t\t\treturn false\n\t\t}\n\t\tt.next = h",
		new: "\t\tt.next = h",
		why: "a push does not see that SystemTimer.Stop closed the stack",
	},
	{
		name: "stop-count", file: "timer.go",
		old: "\tsh.leavePending(t, 0, stateStopped)\n\tsh.addPendingOf(t, -1)\n",
		new: "\tsh.leavePending(t, 0, stateStopped)\n",
		why: "a stopped timer stays counted pending (Len, Stats, WithMaxPending's bound)",
	},
	{
		name: "executor-close-drops", file: "internal/executor/executor.go",
		old: "\t\tleft = w.steal(left) // the caller's own batch too, when it is a worker",
		new: "\t\t_ = w // the caller's own batch too, when it is a worker",
		why: "the executor's Close drops the items workers took and had not started",
	},
	{
		name: "ctx-end-no-settle", file: "context.go",
		old: "\t\t\tif old&finishedBit == 0 {\n\t\t\t\tc.settle()\n\t\t\t}\n\t\t\treturn",
		new: "\t\t\treturn",
		why: "a cancel that finds the context being ended by another returns before it is done",
	},
	{
		name: "ctx-timer-left", file: "context.go",
		old: "\t\tc.t.Stop() // else the creator stops it, once armed",
		new: "\t\t_ = c.t // else the creator stops it, once armed",
		why: "a canceled context leaves its timer pending",
	},
	{
		name: "resetlocked-leave-first", file: "timer.go",
		old: "\t\t\t\tt.unlink()\n\t\t\t\tfailpoint(\"resetLocked:unlinked\")\n\t\t\t\tsh.leavePending(t, nowTick, stateFired)",
		new: "\t\t\t\tsh.leavePending(t, nowTick, stateFired)\n\t\t\t\tfailpoint(\"resetLocked:unlinked\")\n\t\t\t\tt.unlink()",
		why: "Reset(0) of a pending timer marks it fired before unlinking it",
	},
	{
		name: "periodic-stop-no-req", file: "schedule.go",
		old: "\t\tp.stopReq, p.resetReq = true, false\n",
		new: "\t\tp.resetReq = false\n",
		why: "Stop of a periodic timer during its run does not end the series",
	},
	{
		name: "stop-stale-shard", file: "timer.go",
		old:  "\tif t.shard() == nil {\n\t\tpanic(\"timingwheel: Stop called on an unbound Timer\")",
		new:  "\tsh0 := t.shard()\n\tif sh0 == nil {\n\t\tpanic(\"timingwheel: Stop called on an unbound Timer\")",
		more: []string{"\t\t\t\tt.shard().unstack(t) // owned: it stays on this shard", "\t\t\t\tsh0.unstack(t) // owned: it stays on this shard"},
		why:  "Stop takes a timer off the stack of the shard it read before a Reset moved the timer",
	},
	{
		name: "lockshard-no-recheck", file: "timer.go",
		old: "\t\tif t.shard() == sh {\n\t\t\treturn sh",
		new: "\t\tif true {\n\t\t\treturn sh",
		why: "Stop or a locked Reset locks the shard it read, though the timer moved meanwhile",
	},
	{
		name: "resetlocked-wait-locked", file: "timer.go",
		old: "\t\tcase stateOwned:\n\t\t\treturn false, true, nil",
		new: "\t\tcase stateOwned:\n\t\t\twaitOwned()",
		why: "a locked Reset waits for an owned timer under the shard's lock, which a move needs",
	},
	{
		name: "move-no-lock", file: "timer.go",
		old:  "\tfrom.mu.Lock()\n\tatomic.StorePointer",
		new:  "\tatomic.StorePointer",
		more: []string{"\tfrom.stats.migrated++\n\tfrom.mu.Unlock()", "\tfrom.stats.migrated++"},
		why:  "a Reset moves a timer to another shard without the old shard's lock",
	},
	{
		name: "no-move", file: "timer.go",
		old: "\t\t\tif move {\n",
		new: "\t\t\tif false {\n",
		why: "a Reset that re-arms a timer on another processor leaves it on its old shard",
	},
	{
		name: "rearm-stale-shard", file: "timer.go",
		old:  "\t\tfailpoint(\"reset:read\")\n",
		new:  "\t\tsh := t.shard()\n\t\tfailpoint(\"reset:read\")\n",
		more: []string{"\t\t\tsh := t.shard()\n\t\t\t// Owned and on no list", "\t\t\t// Owned and on no list"},
		why:  "a re-arm uses the shard it read before it owned the timer (ABA: moved and stopped meanwhile)",
	},
	{
		name: "token-never-redealt", file: "tokens.go",
		old: "\tif c := d.cleared.Load(); c != 0 && now-time.Duration(c) >= strandAfter {",
		new: "\tif c := d.cleared.Load(); false && c != 0 && now-time.Duration(c) >= strandAfter {",
		why: "a stranded shard token is never dealt anew: a processor places by another's shard until two collections",
	},
	{
		name: "token-stale-used", file: "tokens.go",
		old: "\tif tok.slot.cur.Load() != tok.gen {\n\t\treturn false",
		new: "\tif tok.slot.cur.Load() == 0 {\n\t\treturn false",
		why: "a token whose shard was dealt anew is still used: two processors share a shard",
	},
}
