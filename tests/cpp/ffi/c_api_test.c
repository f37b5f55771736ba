/* Uses the C ABI from plain C: the header must compile as C99/C11 and be enough on its own. */
#include <stdio.h>
#include <string.h>
#include <kiln/ffi/c_api.h>

static int failures = 0;
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

/* A C callback: returns the sum of its int arguments. */
static int SumInts(void* resource, const KilnAny* args, int32_t num_args, KilnAny* result) {
  int64_t sum = *(int64_t*)resource;
  for (int32_t i = 0; i < num_args; ++i) {
    if (args[i].type_index != kKilnTypeInt) {
      return kiln_error_set_raised_from_cstr("TypeError", "sum_ints takes ints");
    }
    sum += args[i].v_int64;
  }
  result->type_index = kKilnTypeInt;
  result->v_int64 = sum;
  return 0;
}

int main(void) {
  int32_t major = 0, minor = -1;
  kiln_abi_version(&major, &minor);
  EXPECT(major == KILN_ABI_VERSION_MAJOR && minor == KILN_ABI_VERSION_MINOR);

  /* Strings: content and type. */
  KilnObjectHandle str = NULL;
  EXPECT(kiln_string_create("kiln", 4, &str) == 0);
  EXPECT(str->type_index == kKilnTypeString);
  EXPECT(((KilnStringObject*)str)->bytes.size == 4);
  EXPECT(memcmp(((KilnStringObject*)str)->bytes.data, "kiln", 5) == 0);

  /* A C callback registered globally, fetched back and called. */
  static int64_t offset = 100;
  KilnObjectHandle func = NULL;
  EXPECT(kiln_function_create(&offset, SumInts, NULL, &func) == 0);
  EXPECT(kiln_func_set_global("c_test.sum_ints", func, 0, "c_api_test") == 0);
  KilnObjectHandle fetched = NULL;
  EXPECT(kiln_func_get_global("c_test.sum_ints", &fetched) == 0 && fetched == func);
  KilnAny args[2];
  memset(args, 0, sizeof(args));
  args[0].type_index = kKilnTypeInt;
  args[0].v_int64 = 2;
  args[1].type_index = kKilnTypeInt;
  args[1].v_int64 = 3;
  KilnAny result;
  memset(&result, 0, sizeof(result));
  EXPECT(kiln_function_call(fetched, args, 2, &result) == 0);
  EXPECT(result.type_index == kKilnTypeInt && result.v_int64 == 105);

  /* Errors come back through the thread-local slot. */
  args[1].type_index = kKilnTypeFloat;
  EXPECT(kiln_function_call(fetched, args, 2, &result) == -1);
  KilnObjectHandle error = NULL;
  kiln_error_move_from_raised(&error);
  EXPECT(error->type_index == kKilnTypeError);
  EXPECT(strncmp(((KilnErrorObject*)error)->kind.data, "TypeError", 9) == 0);

  /* A duplicate name fails and names the first owner. */
  EXPECT(kiln_func_set_global("c_test.sum_ints", func, 0, "second_owner") == -1);
  KilnObjectHandle duplicate_error = NULL;
  kiln_error_move_from_raised(&duplicate_error);
  EXPECT(strstr(((KilnErrorObject*)duplicate_error)->message.data, "c_api_test") != NULL);

  /* Arrays own what they hold: the string survives our release. */
  KilnAny item;
  memset(&item, 0, sizeof(item));
  item.type_index = kKilnTypeString;
  item.v_obj = str;
  KilnObjectHandle array = NULL;
  EXPECT(kiln_array_create(&item, 1, &array) == 0);
  EXPECT(str->ref_count == 2);
  EXPECT(((KilnArrayObject*)array)->size == 1);

  EXPECT(kiln_func_remove_global("c_test.sum_ints") == 0);
  EXPECT(kiln_func_remove_global("c_test.sum_ints") == -1);
  KilnObjectHandle remove_error = NULL;
  kiln_error_move_from_raised(&remove_error);

  kiln_object_dec_ref(array);
  EXPECT(str->ref_count == 1);
  kiln_object_dec_ref(str);
  kiln_object_dec_ref(remove_error);
  kiln_object_dec_ref(duplicate_error);
  kiln_object_dec_ref(error);
  kiln_object_dec_ref(fetched);
  kiln_object_dec_ref(func);

  if (failures == 0) printf("c_api_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
