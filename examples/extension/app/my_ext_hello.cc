// A host program using my_ext: loads the plugin by path and calls its functions by name.
//
//   my_ext_hello [path/to/libkiln_my_ext.so]
#include <kiln/ffi/plugin.h>

#include <cstdint>
#include <iostream>

int main(int argc, char** argv) {
  const char* plugin = argc > 1 ? argv[1] : MY_EXT_PLUGIN;
  try {
    kiln::PluginInfo info = kiln::LoadPlugin(plugin);
    std::cout << "C++: loaded " << info.at("path").cast<kiln::String>() << " ("
              << info.at("name").cast<kiln::String>() << " "
              << info.at("version").cast<kiln::String>() << ")\n";
    int64_t answer = kiln::Function::GetGlobalRequired("my_ext.add_one")(41).cast<int64_t>();
    std::cout << "C++: my_ext.add_one(41) = " << answer << "\n";
    kiln::String greeting =
        kiln::Function::GetGlobalRequired("my_ext.greet")("Kiln").cast<kiln::String>();
    std::cout << "C++: my_ext.greet(\"Kiln\") = \"" << greeting << "\"\n";
  } catch (const kiln::Error& error) {
    std::cerr << "my_ext_hello: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
