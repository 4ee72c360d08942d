package org.distribute;

/** Lookup of the int-valued enums by their C constant. */
final class Enums {
  private Enums() {}

  interface Coded {
    int code();
  }

  static <E extends Enum<E> & Coded> E of(Class<E> cls, int code) {
    for (E e : cls.getEnumConstants()) if (e.code() == code) return e;
    throw new IllegalArgumentException(cls.getSimpleName() + ": unknown value " + code);
  }
}
