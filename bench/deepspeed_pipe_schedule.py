#!/usr/bin/env python3
"""DeepSpeed's pipeline schedule (deepspeed/runtime/pipe/schedule.py, TrainSchedule) replayed
with blocking point-to-point transfers, against the 1F1B time the pipeline model charges.

DeepSpeed's PipelineEngine runs a stage as 2 (m + p - 1) steps. In step t, stage s runs a
forward when t and s have the same parity, else a backward, of the micro-batch

    forward,  t even: t // 2 - s // 2          backward, t even: t // 2 - p + (s + 1) // 2
    forward,  t odd:  (t - 1) // 2 - s // 2    backward, t odd:  (t - 1) // 2 - p + 1 + s // 2

(valid when 0 <= id < m). Before its compute a forward step sends the previous step's input
gradient to s - 1 and receives its activation from s - 1; a backward step receives its output
gradient from s + 1 and sends the previous step's activation to s + 1. Each transfer is a
rendezvous (NCCL send/recv, or broadcast in a group of two in older releases): both sides wait
for the later one, then take `c` seconds, in their compute stream.

The question this answers: does the lock-step structure (half the stages forward, half
backward in a step) cost more than 1F1B's (m + p - 1)(F + B) on uniform stages? It does not:
with free transfers the replay equals 1F1B exactly. Transfers add about 3.7 c per micro-batch
slot on the critical path (240 micro-batches over 35 stages, MT-NLG's layout), where the
asynchronous model adds 2 c: for MT-NLG 530B (c about 0.4 ms against F + B about 170 ms) about
0.4 s of an iteration of 60 s, not the 13 s the MT-NLG probe misses by
(docs/research/validation_leads.md, stop 43).

Run: python3 bench/deepspeed_pipe_schedule.py
"""


def micro_batch_of(step, stage, stages):
    """(micro-batch id, is_forward) stage `stage` runs in step `step`."""
    if step % 2 == stage % 2:
        base = step // 2 if step % 2 == 0 else (step - 1) // 2
        return base - stage // 2, True
    if step % 2 == 0:
        return step // 2 - stages + (stage + 1) // 2, False
    return (step - 1) // 2 - stages + 1 + stage // 2, False


def instructions(micro_batches, stages, stage):
    """The stage's instruction stream: ('send_grad'|'recv_act'|'recv_grad'|'send_act', peer,
    micro-batch) transfers and ('F'|'B', None, micro-batch) computations."""
    valid = lambda mb: 0 <= mb < micro_batches
    out, previous = [], -1
    for step in range(2 * (micro_batches + stages - 1)):
        mb, forward = micro_batch_of(step, stage, stages)
        if forward:
            if valid(previous) and stage > 0:
                out.append(("send_grad", stage - 1, previous))
            if valid(mb) and stage > 0:
                out.append(("recv_act", stage - 1, mb))
        else:
            if valid(mb) and stage < stages - 1:
                out.append(("recv_grad", stage + 1, mb))
            if valid(previous) and stage < stages - 1:
                out.append(("send_act", stage + 1, previous))
        if valid(mb):
            out.append(("F" if forward else "B", None, mb))
        previous = mb
    return out


MATCH = {"send_grad": "recv_grad", "recv_grad": "send_grad",
         "send_act": "recv_act", "recv_act": "send_act"}


def replay(micro_batches, stages, forward_s, backward_s, transfer_s=0.0):
    """Iteration time of the schedule with rendezvous transfers of `transfer_s` each."""
    programs = [instructions(micro_batches, stages, s) for s in range(stages)]
    at = [0] * stages
    clock = [0.0] * stages
    progressed = True
    while progressed:
        progressed = False
        for s in range(stages):
            while at[s] < len(programs[s]):
                kind, peer, mb = programs[s][at[s]]
                if kind in ("F", "B"):
                    clock[s] += forward_s if kind == "F" else backward_s
                elif at[peer] < len(programs[peer]) and programs[peer][at[peer]] == (MATCH[kind], s, mb):
                    clock[s] = clock[peer] = max(clock[s], clock[peer]) + transfer_s
                    at[peer] += 1
                else:
                    break  # waits for its peer to reach the matching transfer
                at[s] += 1
                progressed = True
    assert all(at[s] == len(programs[s]) for s in range(stages)), "the schedule deadlocked"
    return max(clock)


def main():
    print(f"{'m':>5} {'p':>4} {'F':>7} {'B':>7} {'c':>6} {'DeepSpeed':>11} {'1F1B':>11} "
          f"{'ratio':>7} {'extra/slot':>11}")
    for m, p, f, b, c in [(8, 4, 1.0, 2.0, 0.0), (32, 8, 1.0, 3.0, 0.0), (240, 35, 44.6, 124.8, 0.0),
                          (240, 35, 44.6, 124.8, 0.42), (240, 35, 44.6, 124.8, 1.0),
                          (48, 16, 62.9, 171.2, 2.7)]:
        ds = replay(m, p, f, b, c)
        ideal = (m + p - 1) * (f + b)
        print(f"{m:5d} {p:4d} {f:7.1f} {b:7.1f} {c:6.2f} {ds:11.1f} {ideal:11.1f} "
              f"{ds / ideal:7.4f} {(ds - ideal) / (m + p - 1):11.2f}")


if __name__ == "__main__":
    main()
