/* Reference matchers: the table (after Shark's AndroidReferenceMatchers, descriptions in
 * our words) and its resolution against one graph. Pure data and lookups: no file I/O,
 * no printing. */
#include "hprof/matchers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hprof/errmsg.h"

#define ANY_LO (-32768)
#define ANY_HI 32767
#define I MS_HMATCH_INSTANCE
#define S MS_HMATCH_STATIC
#define N MS_HMATCH_NATIVE
#define L MS_HMATCH_LOCAL
/* kind, ignored, subclasses, sdk_min, sdk_max, class, field, manufacturer, build id, why */
#define LEAK(k, lo, hi, c, f, man, d) {k, 0, 0, lo, hi, c, f, man, NULL, d}
#define IGNORE(k, c, f) {k, 1, 0, ANY_LO, ANY_HI, c, f, NULL, NULL, ""}

static const char IMM[] =
    "InputMethodManager keeps a reference to a view after it is detached, until another view "
    "asks for keyboard input (Android issue 171190).";
static const char SPAN[] =
    "Before Android 4.4, TextView saved its text with the spans Editor adds, and those spans "
    "hold the TextView, so the saved state kept the whole view hierarchy.";
static const char TTS[] =
    "TextToSpeech.shutdown() keeps its context, and another process keeps the TextToSpeech "
    "alive (LeakCanary issue 1210).";
static const char SEMCLIP[] = "Samsung's SemClipboardManager inner classes are held by native "
                              "references for IPC calls.";
static const char CLIPEX[] = "Samsung's ClipboardExManager is held by a native callback and "
                             "keeps a destroyed activity as its context.";
static const char RESIMPL[] = "Some vendors added a static mAppContext to ResourcesImpl, which "
                              "ends up holding a lower context such as a service.";
static const char SENSOR[] = "SystemSensorManager keeps the context it was created with in a "
                             "static field.";

static const ms_hmatcher table[] = {
    /* ---- Android framework ---- */
    LEAK(I, 29, 29, "android.app.Activity$1", "this$0", NULL,
         "Android 10's IRequestFinishCallback stub, an anonymous class inside Activity, is kept by "
         "another process after onDestroy() and holds the activity (issuetracker 139738913)."),
    LEAK(I, 19, 33, "android.app.ActivityThread", "mNewActivities", NULL,
         "ActivityThread holds new activities until the main thread becomes idle "
         "(issuetracker 258390457)."),
    LEAK(I, ANY_LO, 19, "android.widget.Editor$SpanController", "this$0", NULL, SPAN),
    LEAK(I, ANY_LO, 19, "android.widget.Editor$EasyEditSpanController", "this$0", NULL, SPAN),
    LEAK(S, 21, 21, "android.media.session.MediaSessionLegacyHelper", "sInstance", NULL,
         "A lazily created static singleton keeps the first context it is given (Android 5.0.1, "
         "fixed in 5.1 by using the application context)."),
    LEAK(S, ANY_LO, 22, "android.text.TextLine", "sCached", NULL,
         "TextLine.sCached, a pool of three instances, was not cleared correctly on recycle "
         "before Android 5.1."),
    LEAK(I, ANY_LO, 30, "android.os.Message", "obj", NULL,
         "An idle HandlerThread keeps the last message it received as a local; dialogs keep "
         "template messages that hold their listeners (issuetracker 146144484, fixed in "
         "Android 12)."),
    LEAK(I, 15, 33, "android.view.inputmethod.InputMethodManager", "mNextServedView", NULL, IMM),
    LEAK(I, 15, 28, "android.view.inputmethod.InputMethodManager", "mServedView", NULL, IMM),
    LEAK(I, 15, 27, "android.view.inputmethod.InputMethodManager", "mServedInputConnection", NULL, IMM),
    LEAK(I, 23, 28, "android.view.inputmethod.InputMethodManager", "mLastSrvView", "HUAWEI",
         "HUAWEI added InputMethodManager.mLastSrvView, which keeps the last served view."),
    LEAK(I, 15, 28, "android.view.inputmethod.InputMethodManager", "mCurRootView", NULL,
         "The InputMethodManager singleton keeps mCurRootView long after its activity is "
         "destroyed."),
    LEAK(I, 31, ANY_HI, "android.view.inputmethod.InputMethodManager", "mImeInsetsConsumer", NULL,
         "InputMethodManager.mImeInsetsConsumer is not cleared when the activity is destroyed."),
    LEAK(I, 33, 33, "android.hardware.input.InputManager", "mLateInitContext", NULL,
         "The InputManager singleton keeps the context it was initialised with, an activity."),
    LEAK(I, 14, 22, "android.animation.LayoutTransition$1", "val$parent", NULL,
         "LayoutTransition keeps its parent ViewGroup through an OnPreDrawListener until the "
         "window is destroyed (Android issue 171830)."),
    LEAK(I, 16, 24, "android.view.textservice.SpellCheckerSession$1", "this$0", NULL,
         "A SpellCheckerSession closed before its service connects keeps the destroyed activity "
         "through its listener's handler (Android issue 172542)."),
    LEAK(I, 22, 22, "android.widget.SpellChecker$1", "this$0", NULL,
         "SpellChecker's posted runnable keeps a detached view that holds a destroyed activity."),
    LEAK(I, 15, 22, "android.support.v7.internal.widget.ActivityChooserModel",
         "mActivityChoserModelPolicy", NULL,
         "ActivityChooserModel keeps the last policy set, which can be an activity "
         "(Android issue 172659)."),
    LEAK(I, ANY_LO, ANY_HI, "android.widget.ActivityChooserModel", "mActivityChoserModelPolicy", NULL,
         "ActivityChooserModel keeps the last policy set, which can be an activity "
         "(Android issue 172659)."),
    LEAK(I, 22, 28, "android.media.projection.MediaProjection$MediaProjectionCallback", "this$0", NULL,
         "MediaProjectionCallback is held by another process and keeps a MediaProjection whose "
         "context is an activity."),
    LEAK(I, ANY_LO, 20, "android.speech.SpeechRecognizer$InternalListener", "this$0", NULL,
         "Before Android 5, SpeechRecognizer's listener was an inner class keeping the "
         "recognizer and its activity context."),
    LEAK(I, ANY_LO, 27, "android.accounts.AccountManager$AmsTask$Response", "this$1", NULL,
         "AccountManager's response stub is held by native code and its task keeps the activity "
         "passed for launching (Android issue 173689)."),
    LEAK(I, ANY_LO, 22, "android.media.MediaScannerConnection", "mContext", NULL,
         "MediaScannerConnection.scanFile() keeps the context it is given when the service does "
         "not disconnect (Android issue 173788)."),
    LEAK(I, 18, 25, "android.os.UserManager", "mContext", NULL,
         "UserManager caches its first instance statically, created with an activity context "
         "(Android issue 173789)."),
    LEAK(I, ANY_LO, 21, "android.appwidget.AppWidgetHost$Callbacks", "this$0", NULL,
         "AppWidgetHost's callbacks stub is held by native code and kept its context."),
    LEAK(I, ANY_LO, 22, "android.media.AudioManager$1", "this$0", NULL,
         "Before Android 6, AudioManager kept the context of the VideoView that requested audio "
         "focus (Android issue 152173)."),
    LEAK(I, ANY_LO, 23, "android.widget.Editor$Blink", "this$0", NULL,
         "The cursor blink message of an EditText in a dismissed dialog keeps the activity "
         "(Android issue 188551)."),
    LEAK(I, ANY_LO, 23, "android.net.ConnectivityManager", "sInstance", NULL,
         "ConnectivityManager keeps its first instance, created with whatever context asked "
         "first, often an activity (Android issue 198852)."),
    LEAK(I, 26, 27, "android.view.accessibility.AccessibilityNodeInfo", "mOriginalText", NULL,
         "Pooled AccessibilityNodeInfo instances keep mOriginalText, whose spans hold the view "
         "hierarchy."),
    LEAK(I, 24, ANY_HI, "android.app.assist.AssistStructure$ViewNodeText", "mText", NULL,
         "AssistStructure (assistant, autofill) keeps text spans that hold the view hierarchy."),
    LEAK(I, 27, 27, "android.widget.AccessibilityIterators$LineTextSegmentIterator", "mLayout", NULL,
         "AccessibilityIterators keeps text layouts whose spans hold the view hierarchy."),
    LEAK(I, 28, 28, "android.hardware.biometrics.BiometricPrompt", "mFingerprintManager", NULL,
         "BiometricPrompt keeps a FingerprintManager that holds a destroyed activity."),
    LEAK(I, 28, 28, "android.widget.Magnifier$InternalPopupWindow", "mCallback", NULL,
         "Magnifier's popup window is held natively by the renderer and keeps its callback after "
         "the activity is destroyed."),
    LEAK(I, 24, 26, "com.android.internal.policy.BackdropFrameRenderer", "mDecorView", NULL,
         "BackdropFrameRenderer's thread can outlive releaseRenderer() and keep mDecorView."),
    LEAK(I, 28, 28, "android.view.ViewGroup$ViewLocationHolder", "mRoot", NULL,
         "Android 9's ViewLocationHolder.clear() does not clear mRoot (issuetracker 112792715)."),
    LEAK(I, 28, 29, "android.view.accessibility.AccessibilityNodeIdManager", "mIdsToViews", NULL,
         "AccessibilityNodeIdManager keeps views that were detached before being attached."),
    LEAK(I, 24, 24, "android.speech.tts.TextToSpeech", "mContext", NULL, TTS),
    LEAK(I, 24, 24, "android.speech.tts.TtsEngines", "mContext", NULL, TTS),
    LEAK(N, ANY_LO, ANY_HI, "android.view.inputmethod.InputMethodManager$ControlledInputConnectionWrapper",
         NULL, NULL, "ControlledInputConnectionWrapper is held by a global reference in native code."),
    LEAK(N, ANY_LO, ANY_HI, "android.widget.Toast$TN", NULL, NULL,
         "Toast.TN is held by a global reference in native code during the IPC that shows the "
         "toast."),
    LEAK(I, 29, 29, "android.app.ApplicationPackageManager$HasSystemFeatureQuery", "this$0", NULL,
         "In an Android 11 preview HasSystemFeatureQuery was an inner class of "
         "ApplicationPackageManager."),
    LEAK(I, 31, 31, "android.companion.CompanionDeviceService$Stub", "this$0", NULL,
         "CompanionDeviceService keeps a Stub that is not cleared after the service is destroyed."),
    LEAK(N, 31, 32, "android.graphics.animation.RenderNodeAnimator", NULL, NULL,
         "A view detached during a ripple animation stays held by the animator's native "
         "reference (issuetracker 229136453)."),
    LEAK(N, 24, 27, "android.media.PlayerBase$1", NULL, NULL,
         "PlayerBase's IAppOpsCallback inner class is held by a native reference and keeps the "
         "player (fixed in Android 9)."),
    {MS_HMATCH_INSTANCE, 0, 0, 32, 32,
     "android.window.WindowOnBackInvokedDispatcher$OnBackInvokedCallbackWrapper", "mCallback", NULL,
     "TPP2.220218.008",
     "An IPC stub kept alive by another process holds a callback that holds a view root "
     "(issuetracker 229007483)."},
    LEAK(I, 33, 33, "ConnectivityManager$CallbackHandler", "this$0", NULL,
         "ConnectivityManager.CallbackHandler can be held statically and keeps a "
         "ConnectivityManager created with an activity (issuetracker 258053962)."),
    LEAK(I, 29, 33, "android.nfc.cardemulation.HostApduService$MsgHandler", "this$0", NULL,
         "A handler that outlives HostApduService keeps the destroyed service."),
    LEAK(N, 31, 32, "android.app.AppOpsManager$3", NULL, NULL,
         "AppOpsManager's IAppOpsActiveCallback stub is held by a native reference until the "
         "calling side is collected (fixed by androidx.core 1.10)."),
    LEAK(I, 30, 30, "android.view.ViewGroup", "mPreSortedChildren", NULL,
         "ViewGroup.mPreSortedChildren, a temporary list, is not cleared after use "
         "(issuetracker 178029590)."),
    LEAK(I, 29, 30, "android.view.ViewGroup", "mCurrentDragChild", NULL,
         "ViewGroup.mCurrentDragChild keeps a dragged view after it is detached "
         "(issuetracker 170276524)."),
    LEAK(I, 28, 29, "android.app.ActivityTransitionState", "mExitingToView", NULL,
         "Shared element transitions keep the view used in the transition "
         "(issuetracker 141132765)."),
    LEAK(I, 33, 33, "android.animation.AnimationHandler", "mAnimatorRequestors", NULL,
         "The AnimationHandler singleton keeps a destroyed activity's ViewRootImpl "
         "(issuetracker 258534826)."),
    LEAK(S, ANY_LO, ANY_HI, "com.facebook.flipper.plugins.inspector.descriptors.ApplicationDescriptor",
         "editedDelegates", NULL, "Flipper's ApplicationDescriptor keeps root views after they are detached."),
    LEAK(N, ANY_LO, 23, "android.app.job.JobService$1", NULL, NULL,
         "JobService was leaked through its binder stub before Android 7."),
    LEAK(N, 33, ANY_HI, "android.service.dreams.DreamService$1", NULL, NULL,
         "DreamService leaks a binder stub (LeakCanary issue 2534)."),
    /* ---- manufacturers ---- */
    LEAK(S, 19, 19, "com.samsung.android.smartclip.SpenGestureManager", "mContext", "samsung",
         "Samsung's SpenGestureManager keeps an activity in a static mContext."),
    LEAK(I, 19, 21, "android.sec.clipboard.ClipboardUIManager", "mContext", "samsung",
         "Samsung's ClipboardUIManager singleton keeps an activity context."),
    LEAK(N, 19, 28, "com.samsung.android.content.clipboard.SemClipboardManager$1", NULL, "samsung", SEMCLIP),
    LEAK(N, 19, 28, "com.samsung.android.content.clipboard.SemClipboardManager$3", NULL, "samsung", SEMCLIP),
    LEAK(I, 23, 23, "android.sec.clipboard.ClipboardExManager", "mContext", "samsung", CLIPEX),
    LEAK(I, 23, 23, "android.sec.clipboard.ClipboardExManager", "mPersonaManager", "samsung", CLIPEX),
    LEAK(I, 22, 22, "android.widget.TextView$IClipboardDataPasteEventImpl", "this$0", "samsung",
         "Samsung's TextView paste callback is held by a native reference and keeps a detached "
         "TextView."),
    LEAK(I, 19, 24, "com.samsung.android.emergencymode.SemEmergencyManager", "mContext", "samsung",
         "Samsung's SemEmergencyManager singleton keeps a DecorContext."),
    LEAK(I, 24, 24, "com.samsung.android.knox.SemPersonaManager", "mContext", "samsung",
         "Samsung's SemPersonaManager keeps its context."),
    LEAK(I, 28, 29, "android.app.SemAppIconSolution", "mContext", "samsung",
         "Samsung's SemAppIconSolution keeps its context."),
    LEAK(S, 19, 19, "com.android.org.chromium.android_webview.AwResource", "sResources", "samsung",
         "AwResource keeps resources that hold an activity context."),
    LEAK(S, 19, 31, "android.widget.TextView", "mLastHoveredView", "samsung",
         "Samsung's static TextView.mLastHoveredView keeps the last hovered view."),
    LEAK(I, 19, 19, "android.os.PersonaManager", "mContext", "samsung",
         "Samsung's PersonaManager, reached from Resources, keeps an activity."),
    LEAK(I, 19, 19, "android.content.res.Resources", "mContext", "samsung",
         "Samsung's Resources has a context (AOSP's has none), kept by a static Resources."),
    LEAK(I, 19, 19, "android.view.ViewConfiguration", "mContext", "samsung",
         "Samsung's ViewConfiguration has a context (AOSP's has none), kept statically."),
    LEAK(S, 19, 19, "android.media.AudioManager", "mContext_static", "samsung",
         "Samsung added a static AudioManager.mContext_static that keeps an activity."),
    LEAK(S, 22, 23, "android.app.ActivityManager", "mContext", "samsung",
         "Samsung added a static ActivityManager.mContext that keeps an activity."),
    LEAK(S, 27, 27, "android.widget.TextView", "mTargetView", "samsung",
         "Samsung added a static TextView.mTargetView that keeps detached views."),
    LEAK(I, 26, 29, "com.android.internal.policy.MultiWindowDecorSupport", "mWindow", "samsung",
         "Samsung's DecorView keeps a MultiWindowDecorSupport whose mWindow is a leaking "
         "PhoneWindow."),
    LEAK(I, 28, 30, "android.view.inputmethod.InputMethodManager", "mCurrentInputConnection", "samsung",
         "InputMethodManager keeps its input connection after the activity is destroyed."),
    LEAK(S, 24, 25, "android.gestureboost.GestureBoostManager", "mContext", "HUAWEI",
         "HUAWEI's GestureBoostManager singleton keeps an activity context."),
    LEAK(S, 19, 22, "android.widget.BubblePopupHelper", "sHelper", "LGE",
         "LG's static EditText bubble popup helper keeps the last focused view."),
    LEAK(I, 21, 21, "com.lge.systemservice.core.LGContext", "mContext", "LGE",
         "LG's LGContext singleton keeps an activity context."),
    LEAK(I, 27, 27, "com.lge.systemservice.core.SmartCoverManager", "mContext", "LGE",
         "LG's SmartCoverManager callback is held by a native reference and keeps an activity "
         "context."),
    LEAK(I, 29, 29, "android.view.inputmethod.InputMethodManager", "mLastFocusView", "LGE",
         "LG's InputMethodManager.mLastFocusView is not cleared when the view is detached."),
    LEAK(I, 19, 19, "com.nvidia.ControllerMapper.MapperClient$ServiceClient", "this$0", "NVIDIA",
         "NVIDIA's ControllerMapper handler keeps its MapperClient and the activity context."),
    LEAK(S, 19, 19, "android.hardware.SystemSensorManager", "mAppContextImpl", "LENOVO", SENSOR),
    LEAK(S, 22, 22, "android.hardware.SystemSensorManager", "mAppContextImpl", "vivo", SENSOR),
    LEAK(S, 21, 22, "android.app.Instrumentation", "mRecommendActivity", "Meizu",
         "Meizu's Instrumentation keeps RecommendActivity (FlymeOS 4.5 and later)."),
    LEAK(I, 19, 22, "android.app.admin.DevicePolicyManager$SettingsObserver", "this$0", "motorola",
         "Motorola's DevicePolicyManager content observer is held by a binder and keeps the "
         "context it was created with."),
    LEAK(I, 30, ANY_HI, "android.app.ExtendedStatusBarManager", "mContext", "SHARP",
         "SHARP's ExtendedStatusBarManager keeps a decor context of a destroyed activity."),
    LEAK(S, 28, 28, "com.oneplus.util.OemSceneCallBlocker", "sContext", "OnePlus",
         "OnePlus's OemSceneCallBlocker keeps an activity in a static field."),
    LEAK(S, 30, 30, "android.os.PerfMonitor", "mLastCallback", "OnePlus",
         "OnePlus's static PerfMonitor.mLastCallback keeps a View.PerformClick."),
    LEAK(I, 28, 28, "android.text.method.TextKeyListener", "mContext", "Razer",
         "Razer added a context to TextKeyListener, whose instances are kept statically."),
    LEAK(S, 30, ANY_HI, "android.content.res.ResourcesImpl", "mAppContext", "HMD Global", RESIMPL),
    LEAK(S, 30, ANY_HI, "android.content.res.ResourcesImpl", "mAppContext", "INFINIX", RESIMPL),
    LEAK(S, 30, ANY_HI, "android.content.res.ResourcesImpl", "mAppContext", "LENOVO", RESIMPL),
    LEAK(S, 30, ANY_HI, "android.content.res.ResourcesImpl", "mAppContext", "Xiaomi", RESIMPL),
    /* ---- memsight: a binder stub held for a remote process ---- */
    {MS_HMATCH_NATIVE, 0, 1, ANY_LO, ANY_HI, "android.os.Binder", NULL, NULL, NULL,
     "A Binder held by a JNI global reference is a stub another process still holds (its "
     "remote reference not yet released); it is freed when that process lets go. Keep what "
     "the stub references small, or clear it when the owner is destroyed."},
    /* ---- never leaks ---- */
    IGNORE(I, "java.lang.ref.WeakReference", "referent"),
    IGNORE(I, "leakcanary.KeyedWeakReference", "referent"),
    IGNORE(I, "java.lang.ref.SoftReference", "referent"),
    IGNORE(I, "java.lang.ref.PhantomReference", "referent"),
    IGNORE(I, "java.lang.ref.Finalizer", "prev"),
    IGNORE(I, "java.lang.ref.Finalizer", "element"),
    IGNORE(I, "java.lang.ref.Finalizer", "next"),
    IGNORE(I, "java.lang.ref.FinalizerReference", "prev"),
    IGNORE(I, "java.lang.ref.FinalizerReference", "element"),
    IGNORE(I, "java.lang.ref.FinalizerReference", "next"),
    IGNORE(I, "sun.misc.Cleaner", "prev"),
    IGNORE(I, "sun.misc.Cleaner", "next"),
    IGNORE(L, NULL, "FinalizerWatchdogDaemon"),
    IGNORE(L, NULL, "main"),
    IGNORE(L, NULL, "LeakCanary-Heap-Dump"),
    IGNORE(I, "leakcanary.internal.InternalLeakCanary", "resumedActivity"),
    IGNORE(I, "leakcanary.internal.InternalLeakCanary", "application"),
    IGNORE(I, "android.view.Choreographer$FrameDisplayEventReceiver", "mMessageQueue"),
};

const ms_hmatcher *ms_hmatchers_table(size_t *n)
{
    *n = sizeof table / sizeof table[0];
    return table;
}

int ms_hmatcher_applies(const ms_hmatcher *m, const ms_hbuild *b)
{
    if (m->sdk_min != ANY_LO || m->sdk_max != ANY_HI) {
        if (b->sdk < 0 || b->sdk < m->sdk_min || b->sdk > m->sdk_max)
            return 0;
    }
    if (m->manufacturer && strcmp(m->manufacturer, b->manufacturer))
        return 0;
    if (m->build_id && strcmp(m->build_id, b->id))
        return 0;
    return 1;
}

void ms_hmatcher_pattern(const ms_hmatcher *m, char *buf, size_t len)
{
    switch (m->kind) {
    case MS_HMATCH_INSTANCE: snprintf(buf, len, "instance field %s#%s", m->cls, m->field); break;
    case MS_HMATCH_STATIC: snprintf(buf, len, "static field %s#%s", m->cls, m->field); break;
    case MS_HMATCH_NATIVE: snprintf(buf, len, "native global variable referencing %s", m->cls); break;
    default: snprintf(buf, len, "local variable on thread %s", m->field); break;
    }
}

void ms_hmatch_free(ms_hmatch *m)
{
    if (!m)
        return;
    free(m->applies);
    free(m->cls_first);
    free(m->cls_list);
    memset(m, 0, sizeof *m);
}

int ms_hmatch_init(ms_hmatch *m, const ms_hgraph *g, const ms_hbuild *b, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->g = g;
    m->table = ms_hmatchers_table(&m->ntable);
    m->applies = calloc(m->ntable, 1);
    m->cls_first = calloc((size_t)g->nclass + 2, sizeof *m->cls_first);
    if (!m->applies || !m->cls_first)
        goto oom;
    for (size_t k = 0; k < m->ntable; k++)
        m->applies[k] = (uint8_t)ms_hmatcher_applies(&m->table[k], b);
    /* instance-field matchers of each class: those naming it or one of its superclasses;
     * counted first, then filled (a class rarely has any) */
    size_t total = 0;
    for (int fill = 0; fill < 2; fill++) {
        total = 0;
        for (uint32_t c = 0; c < g->nclass; c++) {
            m->cls_first[c] = (uint32_t)total;
            for (uint32_t a = c, depth = 0; a < g->nclass && depth < 256; a = g->classes[a].super, depth++) {
                const char *name = ms_hgraph_class_name(g, a);
                for (size_t k = 0; k < m->ntable; k++) {
                    const ms_hmatcher *t = &m->table[k];
                    if (t->kind != MS_HMATCH_INSTANCE || !m->applies[k] || strcmp(t->cls, name))
                        continue;
                    if (fill)
                        m->cls_list[total] = (uint16_t)k;
                    total++;
                }
            }
        }
        m->cls_first[g->nclass] = (uint32_t)total;
        if (!fill) {
            m->cls_list = malloc((total ? total : 1) * sizeof *m->cls_list);
            if (!m->cls_list)
                goto oom;
        }
    }
    return 0;
oom:
    ms_hmatch_free(m);
    ms_hprof_set_err(err, errlen, "leaks: out of memory for the reference matchers");
    return -1;
}

int ms_hmatch_edge(const ms_hmatch *m, ms_hidx src, uint64_t e)
{
    const ms_hgraph *g = m->g;
    uint32_t label = g->edge_label[e];
    unsigned kind = ms_hedge_kind_of(label);
    uint32_t v = ms_hedge_value_of(label);
    if (kind == MS_HEDGE_FIELD || kind == MS_HEDGE_REFERENT) {
        uint32_t c = g->obj_class[src];
        if (c >= g->nclass || m->cls_first[c] == m->cls_first[c + 1] || v >= g->nfield)
            return -1;
        const char *name = g->strs + g->fields[v].name;
        for (uint32_t k = m->cls_first[c]; k < m->cls_first[c + 1]; k++)
            if (!strcmp(m->table[m->cls_list[k]].field, name))
                return m->cls_list[k];
        return -1;
    }
    if (kind != MS_HEDGE_STATIC || v >= g->nstatic)
        return -1;
    const ms_hstatic *s = &g->statics[v];
    const char *cls = ms_hgraph_class_name(g, s->owner), *name = g->strs + s->name;
    for (size_t k = 0; k < m->ntable; k++) {
        const ms_hmatcher *t = &m->table[k];
        if (t->kind == MS_HMATCH_STATIC && m->applies[k] && !strcmp(t->field, name) && !strcmp(t->cls, cls))
            return (int)k;
    }
    return -1;
}

int ms_hmatch_root(const ms_hmatch *m, uint32_t r, const char *(*thread_name)(void *, uint32_t),
                   void *arg)
{
    const ms_hgraph *g = m->g;
    const ms_hroot *root = &g->roots[r];
    if (root->obj >= g->nobj)
        return -1;
    if (root->type == 0x01) { /* JNI global */
        if (g->obj_kind[root->obj] != MS_HOBJ_INSTANCE)
            return -1;
        uint32_t c = g->obj_class[root->obj];
        const char *name = ms_hgraph_class_name(g, c);
        for (size_t k = 0; k < m->ntable; k++) {
            const ms_hmatcher *t = &m->table[k];
            if (t->kind == MS_HMATCH_NATIVE && m->applies[k] &&
                (t->subclasses ? ms_hgraph_class_is_a(g, c, t->cls) : !strcmp(t->cls, name)))
                return (int)k;
        }
        return -1;
    }
    if (root->type == 0x03 && thread_name) { /* a thread's Java locals */
        const char *tn = thread_name(arg, root->thread_serial);
        if (!tn)
            return -1;
        for (size_t k = 0; k < m->ntable; k++) {
            const ms_hmatcher *t = &m->table[k];
            if (t->kind == MS_HMATCH_LOCAL && m->applies[k] && !strcmp(t->field, tn))
                return (int)k;
        }
    }
    return -1;
}
