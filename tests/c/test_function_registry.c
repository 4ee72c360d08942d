/* The registry of update functions (parameter_server.h): registering, looking up and
 * unregistering; names in use and built-ins; every bound on counts and names; NULL
 * arguments; user_data released exactly once on unregistration and never by a refused
 * registration; and a C function run by dist_variable_apply_update on a local
 * ParameterServerStrategy's sharded variable (once per shard, its slot kept between calls).
 * tests/core/function_registry_api_test.cc runs one through a VariableStore directly. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>

#include "dist_strategy_test.h"

#define REG "dist_function_register"

typedef struct {
  int frees;
} free_counter;

static void count_free(void* user_data) { ((free_counter*)user_data)->frees += 1; }

static dist_status_t noop_update(dist_value_t* const* variables, int32_t num_variables,
                                 const dist_value_t* const* args, int32_t num_args,
                                 const char* const* names, const double* values,
                                 int32_t num_hyperparameters, void* user_data) {
  (void)variables, (void)num_variables, (void)args, (void)num_args, (void)names, (void)values;
  (void)num_hyperparameters, (void)user_data;
  return DIST_OK;
}

static int32_t is_registered(const char* name) {
  int32_t registered = -1;
  DT_OK(dist_function_is_registered(name, &registered));
  return registered;
}

/* A plain registration with one argument and nothing else. */
static dist_status_t register_simple(const char* name, free_counter* counter) {
  return dist_function_register(name, noop_update, counter, count_free, 1, NULL, NULL, 0, NULL,
                                NULL, 0);
}

static void test_register_lookup_unregister(void** state) {
  free_counter counter = {0};
  (void)state;
  assert_int_equal(is_registered("my_update"), 0);
  DT_OK(register_simple("my_update", &counter));
  assert_int_equal(is_registered("my_update"), 1);
  assert_int_equal(counter.frees, 0);
  DT_OK(dist_function_unregister("my_update"));
  assert_int_equal(counter.frees, 1);
  assert_int_equal(is_registered("my_update"), 0);
  DT_ERR(dist_function_unregister("my_update"), DIST_NOT_FOUND, "dist_function_unregister",
         "my_update");
  assert_int_equal(counter.frees, 1);
  /* The name is free again. */
  DT_OK(register_simple("my_update", &counter));
  DT_OK(dist_function_unregister("my_update"));
  assert_int_equal(counter.frees, 2);
}

static void test_full_declaration(void** state) {
  free_counter counter = {0};
  const char* slots[] = {"m", "v"};
  const double initial[] = {0.0, 0.1};
  const char* names[] = {"learning_rate", "beta"};
  const double defaults[] = {0.01, NAN};
  (void)state;
  DT_OK(dist_function_register("declared", noop_update, &counter, count_free, 2, slots, initial, 2,
                               names, defaults, 2));
  assert_int_equal(is_registered("declared"), 1);
  DT_OK(dist_function_unregister("declared"));
  assert_int_equal(counter.frees, 1);
  /* NULL free_fn: nothing to release. */
  DT_OK(dist_function_register("no_free", noop_update, NULL, NULL, 0, NULL, NULL, 0, NULL, NULL, 0));
  DT_OK(dist_function_unregister("no_free"));
}

static void test_the_largest_declaration(void** state) {
  enum { kSlots = 16, kHyper = 64 };
  char slot_storage[kSlots][8];
  char hyper_storage[kHyper][8];
  const char* slots[kSlots];
  double initial[kSlots];
  const char* names[kHyper];
  double defaults[kHyper];
  int i;
  (void)state;
  for (i = 0; i < kSlots; ++i) {
    snprintf(slot_storage[i], sizeof slot_storage[i], "s%d", i);
    slots[i] = slot_storage[i];
    initial[i] = i;
  }
  for (i = 0; i < kHyper; ++i) {
    snprintf(hyper_storage[i], sizeof hyper_storage[i], "h%d", i);
    names[i] = hyper_storage[i];
    defaults[i] = i;
  }
  DT_OK(dist_function_register("largest", noop_update, NULL, NULL, 16, slots, initial, kSlots,
                               names, defaults, kHyper));
  DT_OK(dist_function_unregister("largest"));
  /* One past each bound. */
  DT_ERR(dist_function_register("largest", noop_update, NULL, NULL, 17, slots, initial, kSlots,
                                names, defaults, kHyper),
         DIST_INVALID_ARGUMENT, REG, "num_args");
  DT_ERR(dist_function_register("largest", noop_update, NULL, NULL, 16, slots, initial, kSlots + 1,
                                names, defaults, kHyper),
         DIST_INVALID_ARGUMENT, REG, "num_slots");
  DT_ERR(dist_function_register("largest", noop_update, NULL, NULL, 16, slots, initial, kSlots,
                                names, defaults, kHyper + 1),
         DIST_INVALID_ARGUMENT, REG, "num_hyperparameters");
  assert_int_equal(is_registered("largest"), 0);
}

static void test_a_name_in_use_is_refused_and_keeps_its_function(void** state) {
  free_counter first = {0};
  free_counter second = {0};
  (void)state;
  DT_OK(register_simple("taken", &first));
  DT_ERR(register_simple("taken", &second), DIST_ALREADY_EXISTS, REG, "taken");
  assert_int_equal(second.frees, 0);
  assert_int_equal(first.frees, 0);
  assert_int_equal(is_registered("taken"), 1);
  DT_OK(dist_function_unregister("taken"));
  assert_int_equal(first.frees, 1);
  assert_int_equal(second.frees, 0);
}

static void test_builtins_are_registered_and_stay(void** state) {
  static const char* const builtins[] = {"sgd", "momentum", "nesterov_momentum", "adagrad", "adam"};
  free_counter counter = {0};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof builtins / sizeof builtins[0]; ++i) {
    assert_int_equal(is_registered(builtins[i]), 1);
    DT_ERR(dist_function_unregister(builtins[i]), DIST_FAILED_PRECONDITION,
           "dist_function_unregister", builtins[i]);
    assert_int_equal(is_registered(builtins[i]), 1);
    DT_ERR(register_simple(builtins[i], &counter), DIST_ALREADY_EXISTS, REG, builtins[i]);
  }
  assert_int_equal(counter.frees, 0);
}

/* Every refusal: DIST_INVALID_ARGUMENT naming the argument, nothing registered, user_data
 * not released. */
static void test_bad_arguments_are_refused(void** state) {
  free_counter counter = {0};
  const char* slots[] = {"m"};
  const char* two_slots[] = {"m", "m"};
  const char* null_slot[] = {NULL};
  const char* bad_slot[] = {"tab\there"};
  const double initial[] = {0.0, 0.0};
  const double nan_initial[] = {NAN};
  const char* names[] = {"lr"};
  const char* two_names[] = {"lr", "lr"};
  const char* null_name[] = {NULL};
  const double defaults[] = {0.1, 0.2};
  const double infinite[] = {INFINITY};
  char long_name[1026];
  (void)state;
  memset(long_name, 'f', 1025);
  long_name[1025] = '\0';

  DT_ERR(dist_function_register(NULL, noop_update, &counter, count_free, 1, NULL, NULL, 0, NULL,
                                NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "name");
  DT_ERR(register_simple("", &counter), DIST_INVALID_ARGUMENT, REG, "name is empty");
  DT_ERR(register_simple(long_name, &counter), DIST_INVALID_ARGUMENT, REG, "1025 bytes");
  DT_ERR(register_simple("bad\nname", &counter), DIST_INVALID_ARGUMENT, REG, "byte 10");
  DT_ERR(dist_function_register("f", NULL, &counter, count_free, 1, NULL, NULL, 0, NULL, NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "fn");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, -1, NULL, NULL, 0, NULL,
                                NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "num_args");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, slots, initial, -1,
                                NULL, NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "num_slots");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, NULL, initial, 1, NULL,
                                NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "slot_names");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, slots, NULL, 1, NULL,
                                NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "slot_initial_values");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, null_slot, initial, 1,
                                NULL, NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "slot_names[0]");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, bad_slot, initial, 1,
                                NULL, NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "slot_names[0]");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, two_slots, initial, 2,
                                NULL, NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "twice");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, slots, nan_initial, 1,
                                NULL, NULL, 0),
         DIST_INVALID_ARGUMENT, REG, "finite");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, NULL, NULL, 0, names,
                                defaults, -1),
         DIST_INVALID_ARGUMENT, REG, "num_hyperparameters");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, NULL, NULL, 0, NULL,
                                defaults, 1),
         DIST_INVALID_ARGUMENT, REG, "hyperparameter_names");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, NULL, NULL, 0, names,
                                NULL, 1),
         DIST_INVALID_ARGUMENT, REG, "hyperparameter_defaults");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, NULL, NULL, 0, null_name,
                                defaults, 1),
         DIST_INVALID_ARGUMENT, REG, "hyperparameter_names[0]");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, NULL, NULL, 0, two_names,
                                defaults, 2),
         DIST_INVALID_ARGUMENT, REG, "twice");
  DT_ERR(dist_function_register("f", noop_update, &counter, count_free, 1, NULL, NULL, 0, names,
                                infinite, 1),
         DIST_INVALID_ARGUMENT, REG, "not finite");
  assert_int_equal(counter.frees, 0);
  assert_int_equal(is_registered("f"), 0);
}

static void test_unregister_and_lookup_misuse(void** state) {
  int32_t registered = 7;
  (void)state;
  DT_ERR(dist_function_unregister(NULL), DIST_INVALID_ARGUMENT, "dist_function_unregister", "name");
  DT_ERR(dist_function_unregister(""), DIST_INVALID_ARGUMENT, "dist_function_unregister", "name");
  DT_ERR(dist_function_unregister("never_registered"), DIST_NOT_FOUND, "dist_function_unregister",
         "never_registered");
  DT_ERR(dist_function_is_registered(NULL, &registered), DIST_INVALID_ARGUMENT,
         "dist_function_is_registered", "name");
  assert_int_equal(registered, 0);
  DT_ERR(dist_function_is_registered("bad\x01name", &registered), DIST_INVALID_ARGUMENT,
         "dist_function_is_registered", "name");
  DT_ERR(dist_function_is_registered("sgd", NULL), DIST_INVALID_ARGUMENT,
         "dist_function_is_registered", "out_registered");
}

/* At most 1024 functions, the built-ins included; a refused one keeps its user_data. */
static void test_the_number_of_functions_is_bounded(void** state) {
  free_counter counter = {0};
  free_counter refused = {0};
  char name[32];
  int registered = 0;
  int i;
  dist_status_t status = DIST_OK;
  (void)state;
  while (registered <= 1024) {
    snprintf(name, sizeof name, "bulk_%d", registered);
    status = register_simple(name, &counter);
    if (status != DIST_OK) break;
    ++registered;
  }
  DT_ERR(status, DIST_RESOURCE_EXHAUSTED, REG, "1024");
  assert_int_equal(registered, 1024 - 5); /* the five built-ins count */
  assert_int_equal(counter.frees, 0);
  DT_ERR(register_simple("one_more", &refused), DIST_RESOURCE_EXHAUSTED, REG, "one_more");
  assert_int_equal(refused.frees, 0);
  for (i = 0; i < registered; ++i) {
    snprintf(name, sizeof name, "bulk_%d", i);
    DT_OK(dist_function_unregister(name));
  }
  assert_int_equal(counter.frees, registered);
}

/* What scaled_add saw, over every call. */
typedef struct {
  int calls;
  int frees;
  int32_t num_variables[4];
  int64_t rows[4];
  float first_slot_value[4];
  double scale[4];
} scaled_add_state;

static void count_scaled_add_free(void* user_data) { ((scaled_add_state*)user_data)->frees += 1; }

/* variable += scale * arg; slot "steps" += 1. */
static dist_status_t scaled_add(dist_value_t* const* variables, int32_t num_variables,
                                const dist_value_t* const* args, int32_t num_args,
                                const char* const* names, const double* values,
                                int32_t num_hyperparameters, void* user_data) {
  scaled_add_state* seen = (scaled_add_state*)user_data;
  void* variable = NULL;
  void* slot = NULL;
  void* arg = NULL;
  int64_t n = 0;
  int64_t i;
  dist_status_t status;
  const int call = seen->calls++;
  if (call >= 4 || num_variables != 2 || num_args != 1 || num_hyperparameters != 1 ||
      strcmp(names[0], "scale") != 0) {
    return DIST_INTERNAL;
  }
  if ((status = dist_tensor_data(variables[0], &variable)) != DIST_OK) return status;
  if ((status = dist_tensor_data(variables[1], &slot)) != DIST_OK) return status;
  if ((status = dist_tensor_data(args[0], &arg)) != DIST_OK) return status;
  if ((status = dist_tensor_num_elements(variables[0], &n)) != DIST_OK) return status;
  seen->num_variables[call] = num_variables;
  seen->rows[call] = n;
  seen->first_slot_value[call] = ((float*)slot)[0];
  seen->scale[call] = values[0];
  for (i = 0; i < n; ++i) {
    ((float*)variable)[i] += (float)values[0] * ((const float*)arg)[i];
    ((float*)slot)[i] += 1.0f;
  }
  return DIST_OK;
}

static void test_a_registered_function_runs_once_per_shard_of_a_local_variable(void** state) {
  const char* slot_names[] = {"steps"};
  const double slot_initial_values[] = {10.0};
  const char* hyperparameter_names[] = {"scale"};
  const double defaults[] = {1.0};
  const char* scale_name[] = {"scale"};
  const double scale_two[] = {2.0};
  const float initial_values[] = {1, 2, 3};
  const float ones[] = {1, 1, 1};
  const float after_default[] = {2, 3, 4};
  const float after_two[] = {4, 5, 6};
  scaled_add_state seen;
  dist_parameter_server_options_t* options = NULL;
  dist_strategy_t* s = NULL;
  dist_value_t* initial;
  dist_value_t* gradient;
  dist_value_t* w = NULL;
  const dist_value_t* args[1];
  (void)state;
  memset(&seen, 0, sizeof seen);
  unsetenv("TF_CONFIG");
  DT_OK(dist_function_register("c_scaled_add", scaled_add, &seen, count_scaled_add_free, 1,
                               slot_names, slot_initial_values, 1, hyperparameter_names, defaults, 1));
  /* Two shards along axis 0 of a [3] variable: rows 2 and 1. */
  DT_OK(dist_parameter_server_options_create(&options));
  DT_OK(dist_parameter_server_options_set_fixed_shards(options, 2, 0));
  DT_OK(dist_strategy_create_parameter_server(NULL, NULL, options, &s));
  dist_parameter_server_options_destroy(options);
  initial = dts_f32(initial_values, 3, NULL);
  gradient = dts_f32(ones, 3, NULL);
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(initial, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, "w_c", &w));
  DT_OK(dist_strategy_scope_exit(s));
  args[0] = gradient;

  DT_OK(dist_variable_apply_update(w, "c_scaled_add", args, 1, NULL, NULL, 0));
  dts_expect_variable_f32(w, after_default, 3);
  DT_OK(dist_variable_apply_update(w, "c_scaled_add", args, 1, scale_name, scale_two, 1));
  dts_expect_variable_f32(w, after_two, 3);
  assert_int_equal(seen.calls, 4);
  /* Once per shard and call: the shard's rows, its slot from 10 and then 11. */
  assert_int_equal(seen.num_variables[0], 2);
  assert_true(seen.rows[0] + seen.rows[1] == 3 && seen.rows[0] * seen.rows[1] == 2);
  assert_true(seen.rows[2] + seen.rows[3] == 3 && seen.rows[2] * seen.rows[3] == 2);
  assert_true(seen.first_slot_value[0] == 10.0f && seen.first_slot_value[1] == 10.0f);
  assert_true(seen.first_slot_value[2] == 11.0f && seen.first_slot_value[3] == 11.0f);
  assert_true(seen.scale[0] == 1.0 && seen.scale[1] == 1.0);
  assert_true(seen.scale[2] == 2.0 && seen.scale[3] == 2.0);

  dist_value_destroy(w);
  dist_value_destroy(gradient);
  dist_value_destroy(initial);
  dist_strategy_destroy(s);
  assert_int_equal(seen.frees, 0);
  DT_OK(dist_function_unregister("c_scaled_add"));
  assert_int_equal(seen.frees, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_register_lookup_unregister),
      cmocka_unit_test(test_full_declaration),
      cmocka_unit_test(test_the_largest_declaration),
      cmocka_unit_test(test_a_name_in_use_is_refused_and_keeps_its_function),
      cmocka_unit_test(test_builtins_are_registered_and_stay),
      cmocka_unit_test(test_bad_arguments_are_refused),
      cmocka_unit_test(test_unregister_and_lookup_misuse),
      cmocka_unit_test(test_the_number_of_functions_is_bounded),
      cmocka_unit_test(test_a_registered_function_runs_once_per_shard_of_a_local_variable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
