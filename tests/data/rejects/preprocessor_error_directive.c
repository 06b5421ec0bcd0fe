/* reject: 2:2 | preprocessor: #error stop here */
#error stop here
