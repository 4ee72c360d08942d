/* Tests for version.h: the runtime version matches the headers'. */
#include "dist_test.h"

static void test_version_string_matches_header(void** state) {
  const char* version;
  (void)state;
  version = dist_version();
  assert_non_null(version);
  assert_string_equal(version, DIST_VERSION_STRING);
  /* Static: the same pointer's text a second time. */
  assert_string_equal(dist_version(), DIST_VERSION_STRING);
}

static void test_version_string_is_major_minor_patch(void** state) {
  char expected[64];
  (void)state;
  snprintf(expected, sizeof(expected), "%d.%d.%d", (int)DIST_VERSION_MAJOR,
           (int)DIST_VERSION_MINOR, (int)DIST_VERSION_PATCH);
  assert_string_equal(DIST_VERSION_STRING, expected);
  assert_string_equal(dist_version(), expected);
}

static void test_version_number_matches_header(void** state) {
  (void)state;
  assert_int_equal(dist_version_number(), DIST_VERSION_NUMBER);
  assert_int_equal(dist_version_number(),
                   DIST_VERSION_MAJOR * 10000 + DIST_VERSION_MINOR * 100 + DIST_VERSION_PATCH);
  assert_true(DIST_VERSION_MINOR >= 0 && DIST_VERSION_MINOR < 100);
  assert_true(DIST_VERSION_PATCH >= 0 && DIST_VERSION_PATCH < 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version_string_matches_header),
      cmocka_unit_test(test_version_string_is_major_minor_patch),
      cmocka_unit_test(test_version_number_matches_header),
  };
  return cmocka_run_group_tests_name("version", tests, NULL, NULL);
}
