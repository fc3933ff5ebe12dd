/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the config tests (test-config*.c): a throwaway tree with usr/lib/ebs-hydrate and
 * etc/ebs-hydrate under a mkdtemp() directory, two devices for [Match] to tell apart, files
 * written into the tree, and config_load() over it held to the settings or the exact
 * "FILE:LINE: ..." message expected. Include after <cmocka.h>.
 */
#pragma once

#include "config.h"
#include "fixtures.h"

#define USR "usr/lib/ebs-hydrate"
#define ETC "etc/ebs-hydrate"

typedef struct Fixture {
        char *root;
        char *usr;
        char *etc;
        const char *dirs[3];
} Fixture;

/* Two devices: /dev/sdf (nvme1n1) and xvdg (nvme2n1), each with its volume id. */
extern const MatchTarget dev_f;
extern const MatchTarget dev_g;

/* cmocka setup and teardown: a Fixture over a new scratch directory, removed with all in it. */
int config_fixture_setup(void **state);
int config_fixture_teardown(void **state);
#define fixture_test(name) \
        cmocka_unit_test_setup_teardown(name, config_fixture_setup, config_fixture_teardown)

/* ROOT/@relative, malloc'ed. */
char *fixture_path(const Fixture *f, const char *relative);

/* Creates each directory above @path (mkdir -p of its dirname); @path is left as it was. */
void mkdir_parents(char *path);

/* Writes @content to ROOT/@relative, creating the directories on the way. Inline: the fslayout
 * fixtures, in the same library, export a write_file() of their own. */
static inline void write_file(const Fixture *f, const char *relative, const char *content) {
        fixture_write(f->root, relative, content);
}

void assert_settings_equal(const HydrateSettings *a, const HydrateSettings *b);

/* config_load() over the fixture's usr and etc directories. */
int load(const Fixture *f, const MatchTarget *target, HydrateSettings *s, char **err);

/* Loads for @target and expects exactly the settings @expected, with no error. */
void assert_loads(const Fixture *f, const MatchTarget *target, const HydrateSettings *expected);

/* Loads for @target without an error and returns the queue depth it gives. */
unsigned queue_depth_for(const Fixture *f, const MatchTarget *target);

/* Expects config_load() to fail with @error and the message "ROOT/@relative@suffix". */
void assert_load_fails(const Fixture *f, int error, const char *relative, const char *suffix);
