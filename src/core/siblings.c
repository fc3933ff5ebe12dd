/* SPDX-License-Identifier: MIT */
/*
 * The hydrators of one host, and what they publish (siblings.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "siblings.h"
#include "util.h"

#define SIBLING_MAGIC "EBSHIO4" /* with its NUL, 8 bytes; the 4 is the layout's version */

/* The file, as mapped. Counters are stored and loaded whole (8-byte aligned, relaxed atomics):
 * a reader never sees half of one. */
typedef struct Page {
        char magic[8];
        uint32_t size; /* sizeof(Page) */
        uint32_t n_state_disks;
        uint64_t disk;
        uint64_t state_disks[SIBLING_STATE_DISKS];
        int64_t pid;
        _Atomic uint64_t heartbeat_usec;
        _Atomic uint64_t reads_seq; /* odd while the four below change */
        _Atomic uint64_t read_bytes;
        _Atomic uint64_t reads_in_flight;
        _Atomic uint64_t bytes_per_read;
        _Atomic uint64_t requests_per_read; /* the fewest, and the most << 32 */
        _Atomic uint64_t saves;
        _Atomic uint64_t save_bytes;
        _Atomic uint64_t queueing; /* 1: its reads queue (tuner_queueing()) */
        _Atomic uint64_t mapping;  /* 1: it maps its file systems */
} Page;

struct SiblingPub {
        Page *page;
        int dir_fd; /* io/ */
        char name[KERNEL_NAME_MAX + sizeof(SIBLING_SUFFIX)];
        dev_t file_dev;
        ino_t file_ino;
};

struct Sibling {
        const Page *page;
        dev_t file_dev;
        ino_t file_ino;
};

static int file_name(char *buf, size_t size, const char *kernel_name) {
        if (kernel_name[0] == '\0' || kernel_name[0] == '.' || strchr(kernel_name, '/'))
                return -EINVAL;
        if ((size_t)snprintf(buf, size, "%s%s", kernel_name, SIBLING_SUFFIX) >= size)
                return -ENAMETOOLONG;
        return 0;
}

/* io/ under the runtime directory: ours (or root's), closed to writers but its owner. */
static int open_dir(int runtime_fd, bool create) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (create && mkdirat(runtime_fd, SIBLINGS_DIR, 0755) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(runtime_fd, SIBLINGS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 0022))
                return -EPERM;
        return TAKE_FD(fd);
}

static int map_new_page(int fd, Page **ret) {
        void *p;

        if (ftruncate(fd, sizeof(Page)) < 0)
                return -errno;
        p = mmap(NULL, sizeof(Page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
                return -errno;
        *ret = p;
        return 0;
}

static void fill_page(Page *p, dev_t disk, const dev_t *state_disks, unsigned n, uint64_t now) {
        memcpy(p->magic, SIBLING_MAGIC, sizeof(p->magic));
        p->size = sizeof(Page);
        p->disk = disk;
        p->n_state_disks = MIN(n, (unsigned)SIBLING_STATE_DISKS);
        for (unsigned i = 0; i < p->n_state_disks; i++)
                p->state_disks[i] = state_disks[i];
        p->pid = getpid();
        atomic_store_explicit(&p->heartbeat_usec, now, memory_order_relaxed);
}

int sibling_pub_new(SiblingPub **ret, int runtime_fd, const char *kernel_name, dev_t disk,
                    const dev_t *state_disks, unsigned n, uint64_t now_usec) {
        _cleanup_(sibling_pub_freep) SiblingPub *p = NULL;
        _cleanup_close_ int fd = -1;
        char tmp[sizeof(p->name) + 32];
        struct stat st;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->dir_fd = -1;
        r = file_name(p->name, sizeof(p->name), kernel_name);
        if (r < 0)
                return r;
        p->dir_fd = open_dir(runtime_fd, true);
        if (p->dir_fd < 0)
                return p->dir_fd;
        (void)snprintf(tmp, sizeof(tmp), ".%s.%d", p->name, (int)getpid());
        (void)unlinkat(p->dir_fd, tmp, 0); /* left by a process of ours that had this pid */
        fd = openat(p->dir_fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        r = map_new_page(fd, &p->page);
        if (r >= 0 && (fchmod(fd, 0644) < 0 || fstat(fd, &st) < 0))
                r = -errno;
        if (r >= 0) {
                fill_page(p->page, disk, state_disks, n, now_usec);
                p->file_dev = st.st_dev;
                p->file_ino = st.st_ino;
                if (renameat(p->dir_fd, tmp, p->dir_fd, p->name) < 0)
                        r = -errno;
        }
        if (r < 0) {
                (void)unlinkat(p->dir_fd, tmp, 0);
                return r;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

SiblingPub *sibling_pub_free(SiblingPub *p) {
        struct stat st;

        if (!p)
                return NULL;
        if (p->page && p->dir_fd >= 0 &&
            fstatat(p->dir_fd, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            st.st_dev == p->file_dev && st.st_ino == p->file_ino)
                (void)unlinkat(p->dir_fd, p->name, 0);
        if (p->page)
                (void)munmap(p->page, sizeof(Page));
        if (p->dir_fd >= 0)
                (void)close(p->dir_fd);
        free(p);
        return NULL;
}

void sibling_pub_reads(SiblingPub *p, const ActivityOurs *o, uint64_t now_usec) {
        uint64_t seq;

        if (!p)
                return;
        /* A reader must not pair the bytes of after a completion with the reads in flight of
         * before it (or the other way round): a seqlock, whose reader retries. */
        seq = atomic_load_explicit(&p->page->reads_seq, memory_order_relaxed);
        atomic_store_explicit(&p->page->reads_seq, seq + 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&p->page->read_bytes, o->bytes, memory_order_relaxed);
        atomic_store_explicit(&p->page->reads_in_flight, o->reads, memory_order_relaxed);
        atomic_store_explicit(&p->page->bytes_per_read, o->read_bytes, memory_order_relaxed);
        atomic_store_explicit(&p->page->requests_per_read,
                              (uint64_t)o->requests_min | (uint64_t)o->requests_max << 32,
                              memory_order_relaxed);
        atomic_store_explicit(&p->page->reads_seq, seq + 2, memory_order_release);
        atomic_store_explicit(&p->page->heartbeat_usec, now_usec, memory_order_relaxed);
}

void sibling_pub_save(SiblingPub *p, bool begin, uint64_t bytes) {
        uint64_t n;

        if (!p)
                return;
        atomic_store_explicit(&p->page->save_bytes, bytes, memory_order_relaxed);
        n = atomic_load_explicit(&p->page->saves, memory_order_relaxed);
        /* odd while a save is under way */
        if ((n % 2 == 0) == begin)
                atomic_store_explicit(&p->page->saves, n + 1, memory_order_relaxed);
}

void sibling_pub_queueing(SiblingPub *p, bool queueing) {
        if (p)
                atomic_store_explicit(&p->page->queueing, queueing, memory_order_relaxed);
}

void sibling_pub_mapping(SiblingPub *p, bool mapping) {
        if (p)
                atomic_store_explicit(&p->page->mapping, mapping, memory_order_relaxed);
}

int sibling_open(Sibling **ret, int runtime_fd, const char *kernel_name, dev_t disk) {
        _cleanup_close_ int dir_fd = -1, fd = -1;
        char name[KERNEL_NAME_MAX + sizeof(SIBLING_SUFFIX)];
        struct stat st;
        const Page *page;
        Sibling *s;
        void *m;
        int r;

        r = file_name(name, sizeof(name), kernel_name);
        if (r < 0)
                return r;
        dir_fd = open_dir(runtime_fd, false);
        if (dir_fd < 0)
                return dir_fd;
        fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0))
                return -EPERM;
        if (st.st_size != (off_t)sizeof(Page))
                return -EBADMSG;
        m = mmap(NULL, sizeof(Page), PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
                return -errno;
        page = m;
        if (memcmp(page->magic, SIBLING_MAGIC, sizeof(page->magic)) != 0 ||
            page->size != sizeof(Page) || page->n_state_disks > SIBLING_STATE_DISKS) {
                (void)munmap(m, sizeof(Page));
                return -EBADMSG;
        }
        if (page->disk != (uint64_t)disk) {
                (void)munmap(m, sizeof(Page));
                return -ESTALE;
        }
        s = calloc(1, sizeof(*s));
        if (!s) {
                (void)munmap(m, sizeof(Page));
                return -ENOMEM;
        }
        *s = (Sibling){.page = page, .file_dev = st.st_dev, .file_ino = st.st_ino};
        *ret = s;
        return 0;
}

Sibling *sibling_free(Sibling *s) {
        if (!s)
                return NULL;
        (void)munmap((void *)s->page, sizeof(Page));
        free(s);
        return NULL;
}

/* The reads of @page, whole: 0 when they changed while read (try again), else their seq. */
static uint64_t read_reads(const Page *page, ActivityOurs *ret) {
        Page *p = (Page *)page;
        uint64_t seq = atomic_load_explicit(&p->reads_seq, memory_order_acquire), split;

        if (seq % 2 == 1)
                return 0;
        ret->bytes = atomic_load_explicit(&p->read_bytes, memory_order_relaxed);
        ret->reads = atomic_load_explicit(&p->reads_in_flight, memory_order_relaxed);
        ret->read_bytes = atomic_load_explicit(&p->bytes_per_read, memory_order_relaxed);
        split = atomic_load_explicit(&p->requests_per_read, memory_order_relaxed);
        ret->requests_min = (unsigned)(split & UINT32_MAX);
        ret->requests_max = (unsigned)(split >> 32);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&p->reads_seq, memory_order_relaxed) != seq)
                return 0;
        return seq + 1; /* never 0 */
}

bool sibling_read_reads(const Sibling *s, SiblingView *view) {
        uint64_t was = view->reads_seq, seq = 0;

        /* A writer holds it for a few stores: a few tries see it done, unless it died there
         * (then its heartbeat soon stops, and the last reads read stand). */
        for (unsigned i = 0; i < 1000 && seq == 0; i++)
                seq = read_reads(s->page, &view->reads);
        if (seq == 0)
                return false;
        view->reads_seq = seq;
        return seq != was;
}

bool sibling_read(const Sibling *s, uint64_t now_usec, SiblingView *ret) {
        uint64_t beat =
                atomic_load_explicit(&((Page *)s->page)->heartbeat_usec, memory_order_relaxed);

        ActivityOurs reads = ret->reads;
        uint64_t seq = ret->reads_seq;

        if (beat > now_usec + SIBLING_STALE_USEC || now_usec > beat + SIBLING_STALE_USEC)
                return false;
        *ret = (SiblingView){
                .reads = reads, /* what was read last stands if the page cannot be read whole */
                .reads_seq = seq,
                .saves = atomic_load_explicit(&((Page *)s->page)->saves, memory_order_relaxed),
                .save_bytes =
                        atomic_load_explicit(&((Page *)s->page)->save_bytes, memory_order_relaxed),
                .queueing = atomic_load_explicit(&((Page *)s->page)->queueing,
                                                 memory_order_relaxed) == 1,
                .mapping = atomic_load_explicit(&((Page *)s->page)->mapping,
                                                memory_order_relaxed) == 1,
                .n_state_disks = MIN(s->page->n_state_disks, (unsigned)SIBLING_STATE_DISKS),
        };
        for (unsigned i = 0; i < ret->n_state_disks; i++)
                ret->state_disks[i] = (dev_t)s->page->state_disks[i];
        (void)sibling_read_reads(s, ret);
        return true;
}

bool sibling_replaced(const Sibling *s, int runtime_fd, const char *kernel_name) {
        _cleanup_close_ int dir_fd = open_dir(runtime_fd, false);
        char name[KERNEL_NAME_MAX + sizeof(SIBLING_SUFFIX)];
        struct stat st;

        if (dir_fd < 0 || file_name(name, sizeof(name), kernel_name) < 0)
                return true;
        return fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != s->file_dev ||
               st.st_ino != s->file_ino;
}
