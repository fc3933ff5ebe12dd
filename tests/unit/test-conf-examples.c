/* SPDX-License-Identifier: MIT */
/*
 * The EXAMPLES of ebs-hydrate.conf(5), copied out of the page source as a reader would copy
 * them and installed under /etc of a throwaway tree, then loaded with the real parser: each
 * must parse and do what its sentence says, alone and all four together. The page is argv[1].
 */

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "fixtures.h"
#include "test-util.h"
#include "util.h"

#define ETC_DIR "/etc/ebs-hydrate/"
#define DROPIN_DIR ETC_DIR "hydrate.conf.d/"
#define EXAMPLES_MAX 16
#define MIB (UINT64_C(1) << 20)

static const char *page_path;

typedef struct Example {
        char *title;   /* the .SS line */
        char *path;    /* the .I line: /etc/ebs-hydrate/hydrate.conf.d/NAME.conf */
        char *content; /* the .EX block, unescaped */
} Example;

typedef struct Fixture {
        char *root; /* ROOT/usr and ROOT/etc stand for /usr/lib/ebs-hydrate and /etc/ebs-hydrate */
        char *usr;
        char *etc;
        const char *dirs[3];
        Example examples[EXAMPLES_MAX];
        size_t n_examples;
} Fixture;

/* The volumes the examples talk about, with the spellings a mapping name comes in. */
static const MatchTarget sdf[] = {
        {"vol-0aaaaaaaaaaaaaaa1", "sdf", "nvme1n1"},
        {"vol-0aaaaaaaaaaaaaaa2", "/dev/sdf", "nvme2n1"},
        {"vol-0aaaaaaaaaaaaaaa3", "xvdf", "nvme1n1"},
        {"vol-0aaaaaaaaaaaaaaa4", "/dev/xvdf", "nvme3n1"},
};
static const MatchTarget root_volume[] = {
        {"vol-0bbbbbbbbbbbbbbb1", "/dev/xvda", "nvme0n1"},
        {"vol-0bbbbbbbbbbbbbbb2", "xvda", "nvme0n1"},
        {"vol-0bbbbbbbbbbbbbbb3", "/dev/sda1", "nvme0n1"},
        {"vol-0bbbbbbbbbbbbbbb4", "sda1", "nvme0n1"},
};
static const MatchTarget skipped = {"vol-0123456789abcdef0", "sdh", "nvme4n1"};
static const MatchTarget others[] = {
        {"vol-0ccccccccccccccc1", "sdg", "nvme5n1"},
        {"vol-0ccccccccccccccc2", "/dev/xvdb", "nvme6n1"},
        {"vol-0ccccccccccccccc3", "sda2", "nvme7n1"},
        {"vol-0ccccccccccccccc4", "sdf1", "nvme8n1"},
        {"vol-0ccccccccccccccc5", "", "nvme9n1"}, /* mapping name unknown */
        {NULL, NULL, "sdf"},                      /* not EBS: a kernel name is no mapping name */
        {NULL, NULL, "loop3"},
};

/* A roff line as the text it stands for; NULL if it holds an escape an example should not. */
static char *roff_unescape(const char *line) {
        static const struct {
                const char *escape, *text;
        } escapes[] = {
                {"\\-", "-"}, {"\\e", "\\"}, {"\\(aq", "'"}, {"\\(dq", "\""}, {"\\&", ""},
        };
        char *out = malloc(strlen(line) + 1), *o = out;

        assert_non_null(out);
        while (*line) {
                size_t i;

                if (*line != '\\') {
                        *o++ = *line++;
                        continue;
                }
                for (i = 0; i < ELEMENTSOF(escapes); i++)
                        if (strncmp(line, escapes[i].escape, strlen(escapes[i].escape)) == 0)
                                break;
                if (i == ELEMENTSOF(escapes)) {
                        free(out);
                        return NULL;
                }
                o = stpcpy(o, escapes[i].text);
                line += strlen(escapes[i].escape);
        }
        *o = '\0';
        return out;
}

static char *unescape_or_fail(const char *line, unsigned lineno) {
        char *s = roff_unescape(line);

        if (!s)
                fail_msg("%s:%u: unexpected roff escape in an example: %s", page_path, lineno,
                         line);
        return s;
}

static void append_line(char **content, const char *line) {
        char *grown = xasprintf("%s%s\n", *content ? *content : "", line);

        free(*content);
        *content = grown;
}

/* Parses the EXAMPLES section: each .SS is one example, its .I line the path, its .EX block
 * the file. Anything the test cannot copy out exactly fails. */
static void parse_examples(Fixture *f) {
        _cleanup_free_ char *line = NULL;
        char *text;
        bool in_section = false, in_ex = false;
        size_t size = 0;
        unsigned lineno = 0;
        Example *e = NULL;
        FILE *page;
        ssize_t n;

        page = fopen(page_path, "re");
        if (!page)
                fail_msg("cannot open %s: %s", page_path, strerror(errno));
        while ((n = getline(&line, &size, page)) >= 0) {
                lineno++;
                if (n > 0 && line[n - 1] == '\n')
                        line[n - 1] = '\0';
                if (strncmp(line, ".SH ", 4) == 0) {
                        in_section = streq(line, ".SH EXAMPLES");
                        continue;
                }
                if (!in_section || strncmp(line, ".\\\"", 3) == 0)
                        continue;
                if (in_ex) {
                        if (streq(line, ".EE")) {
                                in_ex = false;
                                continue;
                        }
                        if (line[0] == '.' || line[0] == '\'')
                                fail_msg("%s:%u: roff request inside an example file: %s",
                                         page_path, lineno, line);
                        text = unescape_or_fail(line, lineno);
                        append_line(&e->content, text);
                        free(text);
                } else if (strncmp(line, ".SS ", 4) == 0) {
                        assert_true(f->n_examples < EXAMPLES_MAX);
                        e = &f->examples[f->n_examples++];
                        e->title = unescape_or_fail(line + 4, lineno);
                } else if (e && !e->path && strncmp(line, ".I ", 3) == 0) {
                        e->path = unescape_or_fail(line + 3, lineno);
                } else if (streq(line, ".EX")) {
                        if (!e || e->content)
                                fail_msg("%s:%u: an example file outside a .SS of its own, or "
                                         "a second one in the same .SS",
                                         page_path, lineno);
                        in_ex = true;
                }
        }
        assert_int_equal(fclose(page), 0);
        assert_false(in_ex);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        f->root = fixture_tmpdir("test-conf-examples");
        if (!f->root)
                return -1;
        f->usr = xasprintf("%s/usr", f->root);
        f->etc = xasprintf("%s/etc", f->root);
        f->dirs[0] = f->usr;
        f->dirs[1] = f->etc;
        f->dirs[2] = NULL;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        (void)rm_rf(f->root);
        for (size_t i = 0; i < f->n_examples; i++) {
                free(f->examples[i].title);
                free(f->examples[i].path);
                free(f->examples[i].content);
        }
        free(f->root);
        free(f->usr);
        free(f->etc);
        free(f);
        return 0;
}

static const Example *example(Fixture *f, const char *title) {
        if (f->n_examples == 0)
                parse_examples(f);
        for (size_t i = 0; i < f->n_examples; i++)
                if (streq(f->examples[i].title, title))
                        return &f->examples[i];
        fail_msg("%s has no example titled '%s'", page_path, title);
        return NULL;
}

static void mkdir_parents(char *path) {
        for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
                *slash = '/';
        }
}

/* Puts the example where its path says, with ROOT/etc standing for /etc/ebs-hydrate. */
static void install(const Fixture *f, const Example *e) {
        _cleanup_free_ char *path = NULL;
        FILE *fp;

        assert_non_null(e->path);
        assert_non_null(e->content);
        assert_true(strncmp(e->path, ETC_DIR, strlen(ETC_DIR)) == 0);
        path = xasprintf("%s/%s", f->etc, e->path + strlen(ETC_DIR));
        mkdir_parents(path);
        fp = fopen(path, "wxe");
        assert_non_null(fp);
        assert_true(fputs(e->content, fp) >= 0);
        assert_int_equal(fclose(fp), 0);
}

static void install_title(Fixture *f, const char *title) {
        install(f, example(f, title));
}

/* What the installed files make of @t: they must load without an error. */
static HydrateSettings settings_for(const Fixture *f, const MatchTarget *t) {
        _cleanup_free_ char *err = NULL;
        HydrateSettings s;
        int r;

        hydrate_settings_init(&s);
        r = config_load(f->dirs, t, &s, &err);
        if (r < 0)
                fail_msg("loading the example failed: %s", err ? err : strerror(-r));
        assert_null(err);
        return s;
}

static void assert_settings(const Fixture *f, const MatchTarget *t,
                            const HydrateSettings *expected) {
        HydrateSettings s = settings_for(f, t);

        if (s.enabled != expected->enabled || s.queue_depth != expected->queue_depth ||
            s.block_size != expected->block_size || s.rate_limit != expected->rate_limit)
                fail_msg("device %s (mapping '%s', %s): got Enabled=%d QueueDepth=%u "
                         "BlockSize=%" PRIu64 " RateLimit=%" PRIu64 ", expected Enabled=%d "
                         "QueueDepth=%u BlockSize=%" PRIu64 " RateLimit=%" PRIu64,
                         t->volume_id ? t->volume_id : "(none)",
                         t->device_name ? t->device_name : "(none)", t->kernel_name, s.enabled,
                         s.queue_depth, s.block_size, s.rate_limit, expected->enabled,
                         expected->queue_depth, expected->block_size, expected->rate_limit);
}

static void assert_each(const Fixture *f, const MatchTarget *targets, size_t n,
                        const HydrateSettings *expected) {
        for (size_t i = 0; i < n; i++)
                assert_settings(f, &targets[i], expected);
}

static HydrateSettings defaults(void) {
        HydrateSettings s;

        hydrate_settings_init(&s);
        return s;
}

static void test_conf_examples_are_the_four(void **state) {
        static const char *const titles[] = {
                "All volumes",
                "By mapping name sdf",
                "Disable one volume",
                "Rate-limit the root volume",
        };
        Fixture *f = *state;

        parse_examples(f);
        assert_int_equal(f->n_examples, ELEMENTSOF(titles));
        for (size_t i = 0; i < f->n_examples; i++) {
                const Example *e = &f->examples[i];

                assert_string_equal(e->title, titles[i]);
                assert_non_null(e->path);
                assert_non_null(e->content);
                assert_true(strncmp(e->path, DROPIN_DIR, strlen(DROPIN_DIR)) == 0);
                assert_null(strchr(e->path + strlen(DROPIN_DIR), '/'));
                assert_true(strlen(e->path) > strlen(DROPIN_DIR ".conf"));
                assert_string_equal(e->path + strlen(e->path) - strlen(".conf"), ".conf");
                for (size_t j = 0; j < i; j++)
                        assert_string_not_equal(e->path, f->examples[j].path);
        }
}

static void test_conf_examples_all_volumes(void **state) {
        Fixture *f = *state;
        HydrateSettings limited = defaults();

        install_title(f, "All volumes");
        limited.rate_limit = 200 * MIB;
        assert_each(f, sdf, ELEMENTSOF(sdf), &limited);
        assert_each(f, root_volume, ELEMENTSOF(root_volume), &limited);
        assert_each(f, &skipped, 1, &limited);
        assert_each(f, others, ELEMENTSOF(others), &limited);
        assert_settings(f, NULL, &limited); /* a device about which nothing is known */
}

static void test_conf_examples_by_mapping_name_sdf(void **state) {
        Fixture *f = *state;
        HydrateSettings plain = defaults(), deep = defaults();

        install_title(f, "By mapping name sdf");
        deep.queue_depth = 64;
        assert_each(f, sdf, ELEMENTSOF(sdf), &deep);
        assert_each(f, root_volume, ELEMENTSOF(root_volume), &plain);
        assert_each(f, &skipped, 1, &plain);
        assert_each(f, others, ELEMENTSOF(others), &plain);
}

static void test_conf_examples_disable_one_volume(void **state) {
        Fixture *f = *state;
        HydrateSettings plain = defaults(), disabled = defaults();
        MatchTarget same_volume_elsewhere = {skipped.volume_id, "sdz", "nvme9n1"};

        install_title(f, "Disable one volume");
        disabled.enabled = false;
        assert_settings(f, &skipped, &disabled);
        assert_settings(f, &same_volume_elsewhere, &disabled);
        assert_each(f, sdf, ELEMENTSOF(sdf), &plain);
        assert_each(f, root_volume, ELEMENTSOF(root_volume), &plain);
        assert_each(f, others, ELEMENTSOF(others), &plain);
}

static void test_conf_examples_rate_limit_root_volume(void **state) {
        Fixture *f = *state;
        HydrateSettings plain = defaults(), limited = defaults();
        static const MatchTarget sda = {"vol-0bbbbbbbbbbbbbbb5", "/dev/sda", "nvme0n1"};

        install_title(f, "Rate-limit the root volume");
        limited.rate_limit = 100 * MIB;
        assert_each(f, root_volume, ELEMENTSOF(root_volume), &limited);
        assert_settings(f, &sda, &limited); /* xvda is read as sda, as the page says */
        assert_each(f, sdf, ELEMENTSOF(sdf), &plain);
        assert_each(f, &skipped, 1, &plain);
        assert_each(f, others, ELEMENTSOF(others), &plain);
}

/* All four in one directory: their names order them so that each still says what it says. */
static void test_conf_examples_together(void **state) {
        Fixture *f = *state;
        HydrateSettings base = defaults(), s;

        parse_examples(f);
        assert_int_equal(f->n_examples, 4);
        for (size_t i = 0; i < f->n_examples; i++)
                install(f, &f->examples[i]);
        base.rate_limit = 200 * MIB;
        assert_each(f, others, ELEMENTSOF(others), &base);
        s = base;
        s.queue_depth = 64;
        assert_each(f, sdf, ELEMENTSOF(sdf), &s);
        s = base;
        s.enabled = false;
        assert_settings(f, &skipped, &s);
        s = base;
        s.rate_limit = 100 * MIB;
        assert_each(f, root_volume, ELEMENTSOF(root_volume), &s);
}

#define fixture_test(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(int argc, char *argv[]) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_conf_examples_are_the_four),
                fixture_test(test_conf_examples_all_volumes),
                fixture_test(test_conf_examples_by_mapping_name_sdf),
                fixture_test(test_conf_examples_disable_one_volume),
                fixture_test(test_conf_examples_rate_limit_root_volume),
                fixture_test(test_conf_examples_together),
        };

        if (argc != 2) {
                fprintf(stderr, "Usage: %s PATH/TO/ebs-hydrate.conf.5\n", argv[0]);
                return 2;
        }
        page_path = argv[1];
        return cmocka_run_group_tests(tests, NULL, NULL);
}
