// distribute C++ wrapper — Span<T>, a view of contiguous elements.
//
// The wrapper is C++17, where std::span does not exist yet, so it carries this small one.
// Compiled as C++20 it converts to and from std::span implicitly, so callers pass and
// receive std::span there. It also takes an initializer list for read-only views
// (`dist::tensor<float>({1, 2, 3}, {3})`), which std::span cannot before C++26.
#ifndef DISTRIBUTE_CPP_SPAN_HPP_
#define DISTRIBUTE_CPP_SPAN_HPP_

#include <array>
#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <vector>

#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#define DIST_CPP_HAS_STD_SPAN 1
#else
#define DIST_CPP_HAS_STD_SPAN 0
#endif

namespace dist {

template <class T>
class Span {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;

  constexpr Span() = default;
  constexpr Span(T* data, std::size_t size) : data_(data), size_(size) {}
  template <std::size_t N>
  constexpr Span(T (&array)[N]) : data_(array), size_(N) {}  // NOLINT
  template <class U, std::size_t N, class = std::enable_if_t<std::is_convertible_v<U (*)[], T (*)[]>>>
  constexpr Span(std::array<U, N>& array) : data_(array.data()), size_(N) {}  // NOLINT
  template <class U, std::size_t N, class = std::enable_if_t<std::is_convertible_v<const U (*)[], T (*)[]>>>
  constexpr Span(const std::array<U, N>& array) : data_(array.data()), size_(N) {}  // NOLINT
  template <class U, class A, class = std::enable_if_t<std::is_convertible_v<U (*)[], T (*)[]>>>
  Span(std::vector<U, A>& vector) : data_(vector.data()), size_(vector.size()) {}  // NOLINT
  template <class U, class A, class = std::enable_if_t<std::is_convertible_v<const U (*)[], T (*)[]>>>
  Span(const std::vector<U, A>& vector) : data_(vector.data()), size_(vector.size()) {}  // NOLINT
  // Read-only views of a braced list, for arguments: the list lives until the end of the
  // full expression, which is what GCC's -Winit-list-lifetime warns about in general.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  template <class U = T, class = std::enable_if_t<std::is_const_v<U>>>
  constexpr Span(std::initializer_list<value_type> list) : data_(list.begin()), size_(list.size()) {}  // NOLINT
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  // Span<T> to Span<const T>.
  template <class U, class = std::enable_if_t<!std::is_same_v<U, T> && std::is_convertible_v<U (*)[], T (*)[]>>>
  constexpr Span(Span<U> other) : data_(other.data()), size_(other.size()) {}  // NOLINT
#if DIST_CPP_HAS_STD_SPAN
  template <class U, std::size_t E, class = std::enable_if_t<std::is_convertible_v<U (*)[], T (*)[]>>>
  constexpr Span(std::span<U, E> other) : data_(other.data()), size_(other.size()) {}  // NOLINT
  constexpr operator std::span<T>() const { return std::span<T>(data_, size_); }  // NOLINT
#endif

  constexpr T* data() const { return data_; }
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr T& operator[](std::size_t i) const { return data_[i]; }
  constexpr T* begin() const { return data_; }
  constexpr T* end() const { return data_ + size_; }
  constexpr Span subspan(std::size_t offset, std::size_t count) const {
    return Span(data_ + offset, count);
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace dist

#endif  // DISTRIBUTE_CPP_SPAN_HPP_
