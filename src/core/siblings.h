/* SPDX-License-Identifier: MIT */
/*
 * The hydrators of one host tell each other what they do, so that none takes another's reads,
 * or its checkpoints, for a workload (tuner.h, rule 3). Each publishes one small file in the
 * runtime directory's io/ subdirectory, named after its disk and mapped shared, and updates it
 * in place with plain stores: the bytes its reads completed and those it holds in flight, a
 * heartbeat, the disks its checkpoints land on, a count of its saves (odd while one is under
 * way), whether its reads queue and whether it still maps its file systems. A neighbour's
 * hydrator then reads that disk's counters as we read our own: its reads are subtracted, and the
 * writes of a save are nobody's workload; while it maps, the disk's reads are the mapping's, as
 * our own are to us (the mapping's reads are counted when sent, the disk's when done: apart by
 * seconds behind a cap); and when both see their reads queue, the queue is likely one cap's,
 * which they share equally.
 *
 * A file is believed only if it is a regular file of the right size and magic, owned by us or
 * root (the runtime directory is the service user's: nobody else can plant one), names the
 * disk it is found for, and beat within SIBLING_STALE_USEC: a crashed sibling's file is stale,
 * and its disk's I/O is a workload again.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "activity.h"
#include "util.h"

#define SIBLINGS_DIR "io"
#define SIBLING_SUFFIX ".io"
#define SIBLING_STALE_USEC (2 * USEC_PER_SEC)
#define SIBLING_STATE_DISKS 4 /* the disks a state directory is on (RAID, LVM): at most these */

/* What a sibling says, read at one moment. */
typedef struct SiblingView {
        ActivityOurs reads;                     /* its reads (activity.h), as one */
        uint64_t reads_seq;                     /* which publication of them (not 0) */
        uint64_t saves;                         /* +1 when a save begins, +1 when it ends */
        uint64_t save_bytes;                    /* the size of its state file */
        bool queueing;                          /* its reads queue, as its tuner measures */
        bool mapping;                           /* it maps its file systems */
        dev_t state_disks[SIBLING_STATE_DISKS]; /* 0-terminated; none known: every disk */
        unsigned n_state_disks;
} SiblingView;

typedef struct SiblingPub SiblingPub;
typedef struct Sibling Sibling;

/*
 * sibling_pub_new() - publish as the hydrator of @kernel_name (device @disk) in @runtime_fd's
 * io/ (made if missing), with the disks of its state directory (@state_disks, @n: 0 when not
 * known). The file appears whole (renamed into place). 0, or -errno.
 */
int sibling_pub_new(SiblingPub **ret, int runtime_fd, const char *kernel_name, dev_t disk,
                    const dev_t *state_disks, unsigned n, uint64_t now_usec);
/* sibling_pub_free() - unpublish (the file is removed if it is still ours) and release. */
SiblingPub *sibling_pub_free(SiblingPub *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(SiblingPub *, sibling_pub_free)
/* sibling_pub_reads() - our reads @o, published as one (a reader never sees half of them); a
 * heartbeat at @now. Cheap: call it whenever they change. */
void sibling_pub_reads(SiblingPub *p, const ActivityOurs *o, uint64_t now_usec);
/* sibling_pub_queueing() - whether our reads queue now (tuner_queueing()): a sibling that sees
 * its own reads queue too shares the queue with us, and takes its share of it, no more. */
void sibling_pub_queueing(SiblingPub *p, bool queueing);
/* sibling_pub_mapping() - whether we map our file systems now: while we do, a neighbour takes
 * our disk's reads for the mapping's, as we do (hydrator-activity.c). */
void sibling_pub_mapping(SiblingPub *p, bool mapping);
/* sibling_pub_save() - a save of a state file of @bytes begins (@begin) or ends. */
void sibling_pub_save(SiblingPub *p, bool begin, uint64_t bytes);

/*
 * sibling_open() - the publication for the disk @kernel_name (device @disk) in @runtime_fd's
 * io/, if there is one to believe (see above, but for the heartbeat: sibling_read() checks
 * that). -ENOENT when there is none; -EPERM, -EBADMSG or -ESTALE (another disk) when there is
 * one not to believe; other -errno.
 */
int sibling_open(Sibling **ret, int runtime_fd, const char *kernel_name, dev_t disk);
Sibling *sibling_free(Sibling *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sibling *, sibling_free)
/* sibling_read() - what @s says now: false when it did not beat within SIBLING_STALE_USEC of
 * @now_usec (gone, or replaced by another file: sibling_open() again). @ret's reads stay as
 * they were when they cannot be read whole (a writer stopped in the middle of publishing). */
bool sibling_read(const Sibling *s, uint64_t now_usec, SiblingView *ret);
/* sibling_read_reads() - read @s's reads into @view again; true when they changed since
 * (a disk's counters read meanwhile may be of before or after the change: read them again). */
bool sibling_read_reads(const Sibling *s, SiblingView *view);
/* sibling_replaced() - the file under its name is not the one @s maps any more. */
bool sibling_replaced(const Sibling *s, int runtime_fd, const char *kernel_name);
